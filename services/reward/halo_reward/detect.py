"""What a state summary says: which milestones it shows, and a short key identifying the state."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from halo.schemas import StateSummary
from halo_reward.rules import DiffPattern, DomainRules, StateDetector

_BID_PREFIX = re.compile(r"^(\s*)\[[^\]\n]*\]\s*", re.MULTILINE)
_MAX_FLAT_PATHS = 20_000  # a diff larger than this is read partially: detection, not auditing


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "", [], {})


def _get_path(state: dict[str, Any], dotted: str) -> Any:
    cur: Any = state
    for part in dotted.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return None
    return cur


def _flatten(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Leaves of nested dicts as (dotted path, value); REAL nests its diff, our clones key it flat."""
    if isinstance(obj, dict) and obj:
        for key, value in obj.items():
            yield from _flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif prefix:
        yield prefix, obj


class StateView:
    """One observation's state summary, with the derived facts computed at most once."""

    def __init__(self, summary: StateSummary) -> None:
        self.summary = summary
        self._diff: dict[str, list[tuple[str, Any]]] | None = None

    @property
    def has_state(self) -> bool:
        return self.summary.site_state is not None

    def progress_flags(self) -> set[str]:
        progress = (self.summary.site_state or {}).get("progress")
        if not isinstance(progress, dict):
            return set()
        return {str(name) for name, value in progress.items() if _truthy(value)}

    def diff_paths(self) -> dict[str, list[tuple[str, Any]]]:
        if self._diff is None:
            diff = (self.summary.site_state or {}).get("initialfinaldiff")
            self._diff = {}
            if isinstance(diff, dict):
                for op in ("added", "updated", "deleted"):
                    leaves = []
                    for i, leaf in enumerate(_flatten(diff.get(op) or {})):
                        if i >= _MAX_FLAT_PATHS:
                            break
                        leaves.append(leaf)
                    self._diff[op] = leaves
        return self._diff

    def _diff_matches(self, pattern: DiffPattern) -> bool:
        regex = re.compile(pattern.path)
        ops = ("added", "updated", "deleted") if pattern.op == "any" else (pattern.op,)
        for op in ops:
            for path, value in self.diff_paths().get(op, []):
                if regex.search(path) and (pattern.value is None or value == pattern.value):
                    return True
        return False

    def _state_detector_fires(self, det: StateDetector) -> bool:
        if det.progress is not None:
            return det.progress in self.progress_flags()
        if det.path is not None:
            return _truthy(_get_path(self.summary.site_state or {}, det.path))
        return det.diff is not None and self._diff_matches(det.diff)

    def milestones(self, rules: DomainRules) -> set[str]:
        """Milestones this state shows: from the site state when exposed, else from URL/axtree."""
        found: set[str] = set()
        if self.has_state:
            flags = self.progress_flags()
            # A site that keeps its own progress markers (our clones) is authoritative: its flags
            # alone decide. Path and diff detectors are for states without markers (hosted REAL).
            marked = isinstance((self.summary.site_state or {}).get("progress"), dict)
            for name, m in rules.milestones.items():
                detectors = m.state if m.state is not None else [StateDetector(progress=name)]
                if marked:
                    detectors = [d for d in detectors if d.progress is not None] or [StateDetector(progress=name)]
                if any(self._state_detector_fires(d) for d in detectors):
                    found.add(name)
            if rules.shaping.unknown_progress_weight > 0:  # e.g. playground: milestones live in the task
                found |= flags - set(rules.milestones)
            return found
        url, axtree = self.summary.url, self.summary.axtree
        for name, detectors in rules.compiled_page.items():
            for url_re, ax_re in detectors:
                if (url_re is None or url_re.search(url)) and (ax_re is None or ax_re.search(axtree)):
                    found.add(name)
                    break
        return found

    def key(self, rules: DomainRules) -> str:
        """A short hash of URL + state (+ visible structure): equal keys mean "the same state"."""
        h = hashlib.blake2b(digest_size=8)
        parts = rules.shaping.state_key
        if "url" in parts:
            h.update(normalise_url(self.summary.url, rules.shaping.ignore_url_params).encode())
        h.update(b"\x00")
        if "site_state" in parts and self.summary.site_state is not None:
            h.update(json.dumps(self.summary.site_state, sort_keys=True, default=str).encode())
        h.update(b"\x00")
        if "axtree" in parts:
            # Element ids are assigned by the environment and may shift; the structure is the state.
            h.update(_BID_PREFIX.sub(r"\1", self.summary.axtree).encode())
        return h.hexdigest()


def normalise_url(url: str, ignore_params: list[str]) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ignore_params]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(sorted(query)), parts.fragment))
