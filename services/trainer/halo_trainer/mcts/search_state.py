"""What one search keeps beside its tree: node states on disk, the result it returns, and the refusal
of a re-entry that shows another screen (``halo_trainer.mcts.search`` is the search itself)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from halo.schemas import Snapshot
from halo_trainer.mcts.tree import Tree


class ReentryRefused(RuntimeError):
    """A session meant to be in a node's state showed another screen: it is not that state."""


@dataclass
class SearchResult:
    tree: Tree
    path: Path  # the tree file
    reentries: int = 0  # sessions opened in a node's state: restores of its snapshot and forks of those
    reentry_mismatches: int = 0  # ... whose first screenshot differed from the node's: refused
    infra_errors: int = 0  # candidates and rollouts dropped for an infrastructure failure
    critic_failures: int = 0  # expansions whose critic failed or answered no ranking (children scored 0.5)

    def metrics(self) -> dict[str, float]:
        return {
            **self.tree.summary(),
            "reentries": float(self.reentries),
            "reentry_mismatches": float(self.reentry_mismatches),
            "infra_errors": float(self.infra_errors),
            "critic_failures": float(self.critic_failures),
        }


class StateStore:
    """Node states: env snapshots by the sha256 of their JSON, on disk so a node stays re-enterable
    after the search (``POST /sessions/restore`` with the file's content)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: dict[str, Snapshot] = {}

    def put(self, snapshot: Snapshot) -> str:
        data = snapshot.model_dump_json().encode()
        ref = hashlib.sha256(data).hexdigest()
        if ref not in self._cache:
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self.directory / f"{ref}.json"
            if not path.exists():
                tmp = path.with_name(f"{ref}.json.tmp")
                tmp.write_bytes(data)
                tmp.replace(path)
            self._cache[ref] = snapshot
        return ref

    def get(self, ref: str) -> Snapshot:
        if ref not in self._cache:
            self._cache[ref] = Snapshot.model_validate_json((self.directory / f"{ref}.json").read_bytes())
        return self._cache[ref]
