"""Checking a snapshot before it is restored, and working out how to restore it.

A snapshot comes from the wire (``POST /sessions/restore``): its step count, URL and storage are
checked against the task's site before a browser context is taken, and what the restore needs
(the step budget, the run id, the browser state to open, the state to rewind a parked page to)
is read from it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import ValidationError

from halo.schemas import ForkMethod, Snapshot, Task
from halo.service import ServiceError
from halo.settings.env import EnvSettings
from halo_env import browser_state
from halo_env.allowlist import NetworkGuard
from halo_env.backends.base import TaskBackend


class RestorePlan(NamedTuple):
    max_steps: int
    run_id: str
    state: dict[str, Any] | None  # None: reset and replay the snapshot's actions (replay backends)
    rewind_to: dict[str, Any] | None


def check_snapshot(snapshot: Snapshot, backend: TaskBackend, task: Task, settings: EnvSettings) -> RestorePlan:
    """The plan to restore ``snapshot`` of ``task``; ``ServiceError`` 422 names what is wrong with it."""
    meta = snapshot.storage_state.get("halo_page") or {}
    max_steps = meta.get("max_steps") if isinstance(meta.get("max_steps"), int) else 30
    max_steps = min(max(max_steps, 1), 500)
    if snapshot.step > 10_000 or len(snapshot.actions) > 500:
        raise ServiceError(422, "snapshot step or action prefix is implausibly long (max 500 actions)")
    run_id = meta.get("run_id") if isinstance(meta.get("run_id"), str) else settings.real_run_id
    allowed = backend.allowed_origins(task) | set(settings.extra_allowed_origins)
    probe = NetworkGuard()
    probe.configure(allowed)
    if not snapshot.url.startswith(("http://", "https://")) or not probe.allows(snapshot.url):
        raise ServiceError(422, f"snapshot url {snapshot.url[:200]!r} is not on the task's site")
    try:
        state = browser_state.from_snapshot(snapshot)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ServiceError(422, f"invalid snapshot: storage_state.{where}: {err['msg']}") from None
    if state["page"].get("origin") and not probe.allows(state["page"]["origin"]):
        raise ServiceError(422, "snapshot storage belongs to an origin outside the task's site")
    rewind_to = None
    if backend.fork_method is not ForkMethod.SNAPSHOT:
        state = None
    else:  # a page parked at this URL's document is a clone app that renders itself: rewind it
        rewind_to = {**state, "page": {**state["page"], "app": snapshot.url.split("#")[0]}}
    return RestorePlan(max(max_steps, min(snapshot.step + 1, 10_001)), run_id, state, rewind_to)
