"""Typed async clients for the environment and reward services (the trainer's rollout workers use them).

Both speak through ``halo.transport``: its errors (``ServiceUnavailable`` and ``ServiceFailed`` are
infrastructure, the job is retried or quarantined, never scored; ``ServiceRejected`` is a request
that was wrong, a bug to surface) and its retry rule for idempotent calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from halo.schemas import (
    Action,
    CreateSessionRequest,
    ForkRequest,
    ForkResponse,
    ResetResponse,
    RewardBreakdown,
    RewardRequest,
    Snapshot,
    StepRequest,
    StepResponse,
    Task,
    ValidationResult,
)
from halo.schemas.env import CreateLeaseRequest, LeaseInfo, LeaseReleased
from halo.schemas.tasks import LeftOutTask, TaskReachability
from halo.transport import CallError, NotFound, ServiceRejected, Transport

T = TypeVar("T", bound=BaseModel)
logger = logging.getLogger("halo.clients")


class _Client:
    service = "service"
    start_hint = ""

    def __init__(self, base_url: str, timeout_s: float = 60.0, max_retries: int = 2) -> None:
        self._http = Transport(
            self.service, base_url, timeout_s=timeout_s, max_retries=max_retries, start_hint=self.start_hint
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _typed(self, model: type[T], method: str, path: str, **kwargs: Any) -> T:
        return model.model_validate((await self._http.request(method, path, **kwargs)).json())


class EnvClient(_Client):
    """The env's client. Inside ``hold_lease()`` every session it creates belongs to one session
    lease that a background task renews, so the env closes them soon after this process dies."""

    service = "env"
    start_hint = "python -m halo_env"

    def __init__(self, base_url: str, timeout_s: float = 60.0, max_retries: int = 2) -> None:
        super().__init__(base_url, timeout_s, max_retries)
        self.lease_id: str | None = None
        self._lease_holders = 0
        self._lease_keeper: asyncio.Task | None = None
        self._lease_owner = ""
        self._lease_ttl_s = 10.0
        self._lease_lock = asyncio.Lock()

    async def reset(self, task_id: str, seed: int = 0, max_steps: int = 30, run_id: str = "") -> ResetResponse:
        def request(lease_id: str | None) -> dict[str, Any]:
            body = CreateSessionRequest(
                task_id=task_id, seed=seed, max_steps=max_steps, run_id=run_id, lease_id=lease_id
            )
            return {"json": body.model_dump(mode="json")}

        return await self._open_leased("/sessions", request)

    async def _open_leased(self, path: str, request: Callable[[str | None], dict[str, Any]]) -> ResetResponse:
        """A new session under this client's lease (when one is held).

        Not retried on failure: a lost answer would leave an orphan session (closed with the lease,
        or reaped by the env's idle TTL). A lease the env no longer knows created nothing, so that
        one refusal is retried under a fresh lease."""
        for attempt in range(2):
            lease_id = self.lease_id
            try:
                return await self._typed(ResetResponse, "POST", path, retry=False, **request(lease_id))
            except NotFound as exc:
                if attempt or lease_id is None or "unknown lease" not in str(exc):
                    raise
                await self._new_lease(replacing=lease_id)
        raise AssertionError("unreachable")

    # -- session lease -----------------------------------------------------------------------------
    async def create_lease(self, owner: str) -> LeaseInfo:
        body = CreateLeaseRequest(owner=owner).model_dump(mode="json")
        return await self._typed(LeaseInfo, "POST", "/leases", json=body, retry=False)

    async def heartbeat(self, lease_id: str) -> LeaseInfo:
        return await self._typed(LeaseInfo, "POST", f"/leases/{lease_id}/heartbeat")

    async def release_lease(self, lease_id: str) -> LeaseReleased:
        return await self._typed(LeaseReleased, "DELETE", f"/leases/{lease_id}")

    @contextlib.asynccontextmanager
    async def hold_lease(self, owner: str | None = None) -> AsyncIterator[None]:
        """Hold this client's session lease while inside (nested holders share one lease).

        The lease is created on entry (if the env is unreachable the keeper keeps trying; sessions
        created meanwhile are unleased) and renewed every quarter of its TTL by a separate task, so
        a worker blocked on a long policy call keeps it. On exit it is released: its sessions close.
        """
        self._lease_holders += 1
        if self._lease_holders == 1:
            self._lease_owner = _owner_label(owner)
            with contextlib.suppress(CallError):
                await self._new_lease(replacing=None)
            self._lease_keeper = asyncio.create_task(self._keep_lease())
        try:
            yield
        finally:
            self._lease_holders -= 1
            if self._lease_holders == 0:
                await self._drop_lease()

    async def _new_lease(self, replacing: str | None) -> None:
        # One lease at a time: the keeper and a refused reset may both notice a lost lease, and a
        # second new lease would get no heartbeat, taking the sessions made under it down with it.
        async with self._lease_lock:
            if self.lease_id != replacing:
                return  # someone already replaced it
            info = await self.create_lease(self._lease_owner)
            self.lease_id, self._lease_ttl_s = info.lease_id, info.ttl_s
        logger.info("env session lease %s held by %s (ttl %.1f s)", info.lease_id, info.owner, info.ttl_s)

    async def _keep_lease(self) -> None:
        while True:
            await asyncio.sleep(self._lease_ttl_s / 4 if self.lease_id else 1.0)
            lease_id = self.lease_id
            try:
                if lease_id is not None:
                    try:
                        await self.heartbeat(lease_id)
                        continue
                    except ServiceRejected as exc:  # expired (this process stalled) or the env restarted
                        logger.warning("env session lease %s lost (%s); taking a new one", lease_id, exc)
                await self._new_lease(replacing=lease_id)
            except CallError as exc:  # the env is unreachable: try again at the next beat
                logger.warning("env session lease heartbeat failed: %s", exc)
            except Exception:  # the keeper must outlive one odd answer
                logger.exception("env session lease heartbeat failed")

    async def _drop_lease(self) -> None:
        keeper, self._lease_keeper = self._lease_keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        lease_id, self.lease_id = self.lease_id, None
        if lease_id is not None:
            with contextlib.suppress(CallError):
                await self.release_lease(lease_id)

    async def step(self, session_id: str, action: Action) -> StepResponse:
        body = StepRequest(action=action).model_dump(mode="json")
        return await self._typed(StepResponse, "POST", f"/sessions/{session_id}/step", json=body, retry=False)

    async def fork(self, session_id: str, n: int) -> ForkResponse:
        body = ForkRequest(n=n).model_dump(mode="json")
        return await self._typed(ForkResponse, "POST", f"/sessions/{session_id}/fork", json=body, retry=False)

    async def snapshot(self, session_id: str) -> Snapshot:
        """The session's browser state, enough to recreate it later in a fresh context (``restore``)."""
        return await self._typed(Snapshot, "GET", f"/sessions/{session_id}/snapshot")

    async def restore(self, snapshot: Snapshot) -> ResetResponse:
        """A new session in ``snapshot``'s state, under this client's lease like a reset's."""
        body = snapshot.model_dump(mode="json")

        def request(lease_id: str | None) -> dict[str, Any]:
            return {"json": body, "params": {"lease_id": lease_id} if lease_id else None}

        return await self._open_leased("/sessions/restore", request)

    async def validate(self, session_id: str) -> ValidationResult:
        return await self._typed(ValidationResult, "POST", f"/sessions/{session_id}/validate")

    async def close(self, session_id: str) -> None:
        with contextlib.suppress(NotFound):  # already gone is fine
            await self._http.request("DELETE", f"/sessions/{session_id}")

    async def screenshot(self, sha256: str) -> bytes:
        return (await self._http.request("GET", f"/screenshots/{sha256}")).content

    async def tasks(self, domain: str | None = None) -> list[Task]:
        params = {"domain": domain} if domain else None
        return [Task.model_validate(t) for t in (await self._http.request("GET", "/tasks", params=params)).json()]

    async def domains(self) -> list[str]:
        """Every domain (site) some backend of the env service has tasks for, sorted."""
        return sorted({t.domain for t in await self.tasks()})

    async def left_out(self) -> list[LeftOutTask]:
        """REAL v2 tasks that do not run offline on this env service, with the reasons."""
        return [LeftOutTask.model_validate(t) for t in (await self._http.request("GET", "/tasks/left-out")).json()]

    async def reachability(self, domain: str, timeout_s: float = 3.0) -> list[TaskReachability]:
        """Whether each of ``domain``'s tasks' sites answers from the env service (one probe per origin)."""
        params = {"domain": domain, "timeout_s": timeout_s}
        response = await self._http.request("GET", "/tasks/reachability", params=params, timeout_s=timeout_s + 30)
        return [TaskReachability.model_validate(t) for t in response.json()]


def _owner_label(owner: str | None) -> str:
    label = owner or f"{socket.gethostname()}-{os.getpid()}"
    return re.sub(r"[^A-Za-z0-9_\-.:@]", "_", label)[:200] or "worker"


class RewardClient(_Client):
    service = "reward"
    start_hint = "python -m halo_reward"

    async def reward(self, request: RewardRequest) -> RewardBreakdown:
        # Idempotent by transition_id on the service side, so retrying is safe.
        return await self._typed(RewardBreakdown, "POST", "/reward", json=request.model_dump(mode="json"))
