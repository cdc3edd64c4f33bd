"""Per-domain reward rules, loaded from ``configs/rewards/<domain>.yaml``.

A rules file names the domain's milestones with their weights and how to detect each one:

* ``state`` detectors run when the site exposes its state (our clones, and hosted REAL sites at
  the end of an episode): a ``progress`` flag, a truthy ``path`` in the state, or a ``diff``
  pattern over the flattened ``initialfinaldiff``. A milestone with no ``state`` list is detected
  by the progress flag of the same name, which is what the clones record.
* ``page`` detectors (``url`` / ``axtree`` regular expressions) are the fallback for sites that
  expose no state at all (hosted REAL sites mid-episode).

``default.yaml`` holds the general shaping weights; a domain file may override any of them.
Unknown domains get the default rules (shaping only, no milestones).
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DOMAIN_PATTERN = re.compile(r"^[a-z0-9_\-]{1,40}$")
STATE_KEY_PARTS = ("url", "site_state", "axtree")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {value!r}: {exc}") from exc
    return value


class DiffPattern(_Strict):
    """Matches a changed path of ``initialfinaldiff`` (nested dicts are flattened to dotted paths)."""

    op: Literal["added", "updated", "deleted", "any"] = "any"
    path: str  # regex, searched in the dotted path, e.g. '^email\\.emails\\.[^.]+\\.sent$'
    value: Any = None  # when set, the changed value must equal it

    _check = field_validator("path")(_regex)


class StateDetector(_Strict):
    """Exactly one of: a progress flag, a truthy dotted path in the state, a diff pattern."""

    progress: str | None = None
    path: str | None = None
    diff: DiffPattern | None = None

    @model_validator(mode="after")
    def _one(self) -> StateDetector:
        if (self.progress is not None) + (self.path is not None) + (self.diff is not None) != 1:
            raise ValueError("a state detector needs exactly one of 'progress', 'path', 'diff'")
        return self


class PageDetector(_Strict):
    """A regex searched in the page URL or in the accessibility-tree text (both when both are set)."""

    url: str | None = None
    axtree: str | None = None

    @model_validator(mode="after")
    def _some(self) -> PageDetector:
        if self.url is None and self.axtree is None:
            raise ValueError("a page detector needs 'url' and/or 'axtree'")
        for value in (self.url, self.axtree):
            if value is not None:
                _regex(value)
        return self


class Milestone(_Strict):
    weight: Annotated[float, Field(ge=0.0, le=100.0)]
    state: list[StateDetector] | None = None  # None: the progress flag named like the milestone
    page: list[PageDetector] = Field(default_factory=list)
    description: str = ""


class Shaping(_Strict):
    """General shaping weights (reward units per transition)."""

    valid: float = 0.1  # a well-formed action the page could take
    invalid: float = -0.5  # unparseable answer or bad arguments
    action_error: float = -0.5  # well-formed action the page could not take (env's last_action_error)
    novelty: float = 0.2  # next state never seen before in this episode branch
    novelty_limit: Annotated[int, Field(ge=0, le=10_000)] = 10  # novelty pays at most this often per episode
    loop: float = -1.0  # returned to an earlier state, repeated an ineffective action, or stalled
    stall_limit: Annotated[int, Field(ge=0, le=100)] = 5  # this many no-effect steps in a row is a loop; 0: off
    step_cost: float = 0.0  # added to every scored transition (negative to favour short episodes)
    success: float = 10.0  # task validated successful by the evaluator, paid once per episode
    unknown_progress_weight: Annotated[float, Field(ge=0.0, le=100.0)] = 0.0  # progress flags not listed
    state_key: list[Literal["url", "site_state", "axtree"]] = Field(default_factory=lambda: list(STATE_KEY_PARTS))
    ignore_url_params: list[str] = Field(default_factory=lambda: ["run_id", "task_id"])
    exempt_from_repeat: list[str] = Field(default_factory=list)  # action types never counted as repeats


class DomainRules(_Strict):
    domain: str
    milestones: dict[str, Milestone] = Field(default_factory=dict)
    shaping: Shaping = Field(default_factory=Shaping)

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        if not DOMAIN_PATTERN.match(value):
            raise ValueError(f"domain {value!r} must match {DOMAIN_PATTERN.pattern}")
        return value

    @cached_property
    def compiled_page(self) -> dict[str, list[tuple[re.Pattern | None, re.Pattern | None]]]:
        return {
            name: [
                (re.compile(d.url) if d.url else None, re.compile(d.axtree, re.MULTILINE) if d.axtree else None)
                for d in m.page
            ]
            for name, m in self.milestones.items()
        }

    def weight(self, milestone: str) -> float:
        m = self.milestones.get(milestone)
        return m.weight if m is not None else self.shaping.unknown_progress_weight

    def potential(self, reached: set[str] | frozenset[str]) -> float:
        """phi(s): the summed weights of the milestones reached so far (monotone within an episode)."""
        return sum(self.weight(name) for name in reached)


class RuleBook:
    """All domains' rules, loaded once at start; a bad file fails the start, not a request."""

    def __init__(self, by_domain: dict[str, DomainRules], default: DomainRules) -> None:
        self._by_domain = by_domain
        self.default = default

    def for_domain(self, domain: str) -> DomainRules:
        return self._by_domain.get(domain, self.default)

    @property
    def domains(self) -> list[str]:
        return sorted(self._by_domain)

    @classmethod
    def load(cls, rules_dir: Path) -> RuleBook:
        default_path = rules_dir / "default.yaml"
        base: dict[str, Any] = _read(default_path) if default_path.exists() else {"domain": "default"}
        base_shaping = base.get("shaping") or {}
        default = DomainRules.model_validate({**base, "domain": "default", "shaping": base_shaping})
        by_domain: dict[str, DomainRules] = {}
        for path in sorted(rules_dir.glob("*.yaml")):
            if path.name == "default.yaml":
                continue
            raw = _read(path)
            raw.setdefault("domain", path.stem)
            if raw["domain"] != path.stem:
                raise ValueError(f"{path.name}: domain {raw['domain']!r} must match the file name")
            raw["shaping"] = {**base_shaping, **(raw.get("shaping") or {})}
            try:
                by_domain[path.stem] = DomainRules.model_validate(raw)
            except ValueError as exc:
                raise ValueError(f"{path.name}: {exc}") from exc
        return cls(by_domain, default)


def _read(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path.name}: expected a mapping at the top level")
    return data
