"""The local stack's state file, ``<data_dir>/stack/stack.json``: every process any ``up`` started,
so that ``down`` stops exactly those; and the lock that lets one ``up`` or ``down`` run at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from halo.cli.stack_processes import ProcessRecord, same_process
from halo.settings import HaloSettings


@dataclass
class StackState:
    redis_url: str
    processes: list[ProcessRecord] = field(default_factory=list)

    def live(self, service: str) -> list[ProcessRecord]:
        return [p for p in self.processes if p.service == service and same_process(p)]


def state_path(settings: HaloSettings | None = None) -> Path:
    return (settings or HaloSettings()).data_dir / "stack" / "stack.json"


def load_state(settings: HaloSettings | None = None) -> StackState | None:
    path = state_path(settings)
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    processes = [ProcessRecord(**p) for p in raw.get("processes", [])]
    # State files written before processes were recorded with their start time.
    for s in raw.get("services", []):
        if s.get("started_by_stack") and s.get("pid"):
            processes.append(ProcessRecord(s["name"], s["pid"], None, s.get("url", ""), s.get("log")))
    if raw.get("redis_pid"):
        processes.append(ProcessRecord("redis", raw["redis_pid"], None))
    return StackState(redis_url=raw["redis_url"], processes=processes)


def save_state(state: StackState, settings: HaloSettings | None = None) -> None:
    path = state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(settings: HaloSettings, say: Callable[[str], None]) -> Iterator[None]:
    """One ``up`` or ``down`` at a time per data folder (two shells running `halo train` at once)."""
    path = settings.data_dir / "stack" / "lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("another `halo stack up` or `down` is running; waiting for it")
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield
