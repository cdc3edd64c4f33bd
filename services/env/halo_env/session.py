"""One session's record: its task, its lease on a browser context, its episode so far.

The manager (``sessions.py``) owns the records; observation, opening and recovery read and update
them. ``checkpoint`` is the browser state captured with the last observation, what a recovery
rebuilds.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from halo.schemas import Action, ActionType, Observation, SessionInfo, Task
from halo_env.backends.base import TaskBackend
from halo_env.executor import Pointer
from halo_env.pool import Lease

ENDS_EPISODE = (ActionType.TERMINATE, ActionType.ANSWER)


@dataclass(eq=False)
class Session:
    id: str
    task: Task
    backend: TaskBackend
    lease: Lease
    max_steps: int
    run_id: str
    seed: int = 0
    step: int = 0
    actions: list[Action] = field(default_factory=list)
    pointer: Pointer = field(default_factory=Pointer)
    answer: str | None = None
    terminated: bool = False
    truncated: bool = False
    infra_errors: int = 0
    created_at: float = field(default_factory=time.time)
    last_used_at: float = field(default_factory=time.time)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_obs: Observation | None = None
    checkpoint: dict[str, Any] | None = None  # browser state at last_obs, for recovery
    pending_infra: str | None = None  # a failure noticed between steps (browser lost), told at the next step
    # Why the infrastructure ended the episode (too many browser failures, a rebuild that failed);
    # None when the agent or the step budget ended it. A fork is refused with this, not "ended".
    infra_end: str | None = None
    recovery: asyncio.Task | None = None
    popups: set[asyncio.Task] = field(default_factory=set)  # new tabs being folded into the session's tab
    popups_opened: int = 0  # new tabs seen so far: a capture that overlapped one may be retried
    closed: bool = False
    lease_id: str | None = None  # the owner's session lease (halo_env.leases); None: idle TTL only

    @property
    def ended(self) -> bool:
        return self.terminated or self.truncated

    def info(self) -> SessionInfo:
        return SessionInfo(
            session_id=self.id,
            task_id=self.task.id,
            step=self.step,
            created_at=self.created_at,
            last_used_at=self.last_used_at,
            terminated=self.terminated,
            truncated=self.truncated,
            lease_id=self.lease_id,
        )
