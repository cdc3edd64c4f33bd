"""Closing sessions nobody uses any more: those of expired or released leases, and idle ones.

``SessionReaping`` is a part of ``SessionManager`` (a mixin): the lease routes (renew, release),
the sweep that closes the sessions of leases whose heartbeat stopped, the reaper of idle unleased
sessions, and the loop that runs both. The manager provides the session table, the lease book,
the settings and ``close``; ``leases.py`` keeps the book itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from halo.schemas.env import LeaseInfo, LeaseReleased
from halo.service import ServiceError
from halo.settings.env import EnvSettings
from halo_env import metrics
from halo_env.leases import LeaseBook
from halo_env.session import Session

# The manager's logger: these sweeps were always logged as the session loop's.
logger = logging.getLogger("halo.env.sessions")


class SessionReaping:
    """The lease and reaper half of ``SessionManager``; see the module docstring."""

    s: EnvSettings
    leases: LeaseBook
    _sessions: dict[str, Session]

    if TYPE_CHECKING:

        async def close(self, session_id: str) -> None: ...

    async def reap(self) -> int:
        """Close unleased sessions unused for longer than the TTL; returns how many."""
        now = time.time()
        idle = [
            s
            for s in self._sessions.values()
            if s.lease_id is None and now - s.last_used_at > self.s.session_ttl_s and not s.lock.locked()
        ]
        for s in idle:
            logger.info("reaping session %s (idle %.0f s)", s.id[:13], now - s.last_used_at)
            with contextlib.suppress(ServiceError):
                await self.close(s.id)
            metrics.REAPED.inc()
        return len(idle)

    # -- leases ---------------------------------------------------------------------------------
    def renew_lease(self, lease_id: str) -> LeaseInfo:
        return self.leases.renew(lease_id).info()

    async def release_lease(self, lease_id: str) -> LeaseReleased:
        lease = self.leases.pop(lease_id)
        if lease is None:
            raise ServiceError(404, f"unknown lease {lease_id[:80]!r} (expired, released or never created)")
        return LeaseReleased(lease_id=lease_id, sessions_closed=await self._close_many(lease.sessions))

    async def expire_leases(self) -> int:
        """Close every session of the leases whose heartbeat stopped; returns how many sessions."""
        closed = 0
        for lease in self.leases.pop_expired():
            n = await self._close_many(lease.sessions)
            logger.warning(
                "lease %s of %s expired (no heartbeat for %.1f s): closed its %d sessions",
                lease.id[:14],
                lease.owner,
                time.monotonic() - lease.renewed_mono,
                n,
            )
            metrics.LEASE_EXPIRED_SESSIONS.inc(n)
            closed += n
        return closed

    async def _close_many(self, session_ids: set[str]) -> int:
        # Concurrently: a session in the middle of a step is closed when the step ends (its lock),
        # which must not hold up the others.
        results = await asyncio.gather(*(self.close(sid) for sid in list(session_ids)), return_exceptions=True)
        metrics.SESSIONS.set(len(self._sessions))
        return sum(r is None for r in results)

    async def reap_forever(self) -> None:
        """Expire leases every ``lease_sweep_s``; reap idle sessions every ``reap_interval_s``."""
        sweep_s = self.lease_sweep_s
        last_reap = time.monotonic()
        while True:
            await asyncio.sleep(min(sweep_s, self.s.reap_interval_s))
            try:
                await self.expire_leases()
                if time.monotonic() - last_reap >= self.s.reap_interval_s:
                    last_reap = time.monotonic()
                    await self.reap()
            except Exception:  # the reaper must outlive any one bad session
                logger.exception("reaper sweep failed")

    @property
    def lease_sweep_s(self) -> float:
        # A dead owner's sessions close within ttl + one sweep; a second at most keeps that near the TTL.
        return min(1.0, self.s.lease_ttl_s / 4)
