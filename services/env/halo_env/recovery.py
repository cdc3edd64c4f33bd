"""Failure recovery: what a step answers when the browser fails, and the rebuild that follows.

A failure of the browser (a crash, a dead process, a page that stops answering) is an
infrastructure error: the step answers at once with the previous observation and
``last_action_error_kind = "infra"``, the action does not count, and the session is rebuilt in a
fresh context from its last checkpoint (or reset and replayed for replay-fork backends) before its
next request is served. After ``max_infra_errors`` such errors the episode is truncated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from typing import Any

from playwright.async_api import Browser
from playwright.async_api import Error as PlaywrightError

from halo.schemas import ErrorKind, ForkMethod, StepResponse
from halo.service import ServiceError
from halo.settings.env import EnvSettings
from halo_env import metrics
from halo_env.executor import InfraError
from halo_env.opening import PageOpener
from halo_env.pool import BrowserPool
from halo_env.session import Session

logger = logging.getLogger("halo.env.recovery")


class Recovery:
    def __init__(self, settings: EnvSettings, pool: BrowserPool, opener: PageOpener) -> None:
        self.s = settings
        self.pool = pool
        self.opener = opener

    def failed_step(self, session: Session, message: str) -> StepResponse:
        """The answer to a step the browser failed; starts the session's rebuild."""
        logger.warning("session %s step %d: %s", session.id[:13], session.step, message)
        session.pending_infra = None  # this answer tells the client; do not tell it twice
        self.start(session)
        return self.answer(session, message, count=True)

    def answer(self, session: Session, message: str, count: bool) -> StepResponse:
        """The previous observation with the infrastructure error; ``count`` moves toward truncation."""
        if count:
            session.infra_errors += 1
            if session.infra_errors >= self.s.max_infra_errors:
                session.truncated = True
                message += f" ({session.infra_errors} infrastructure errors: the episode is truncated)"
                session.infra_end = message
        metrics.STEPS.labels("infra_error").inc()
        assert session.last_obs is not None
        obs = session.last_obs.model_copy(
            update={
                "last_action_error": message,
                "last_action_error_kind": ErrorKind.INFRA,
                "blocked_requests": [],
                "truncated": session.truncated,
            }
        )
        return StepResponse(
            observation=obs,
            truncated=session.truncated,
            info={"infra_error": True, "action_taken": False, "restored_to_step": session.step},
        )

    def start(self, session: Session) -> None:
        if session.recovery is None or session.recovery.done():
            session.recovery = asyncio.create_task(self._rebuild(session))

    async def _rebuild(self, session: Session) -> None:
        """Replace the session's context with a fresh one rebuilt from its last checkpoint."""
        t0 = time.perf_counter()
        await self.pool.discard(session.lease)
        if session.closed:
            return
        try:
            session.lease = await self.pool.acquire()
            state = session.checkpoint if session.backend.fork_method is ForkMethod.SNAPSHOT else None
            # Keep what the client was last shown; adopt the fresh screenshot and ids of the rebuilt page.
            session.last_obs, session.checkpoint = await self.opener.open(session, state)
            logger.info("session %s rebuilt in %.2f s", session.id[:13], time.perf_counter() - t0)
        except Exception as exc:  # the session cannot continue: say so at its next request
            logger.warning("session %s could not be rebuilt: %s", session.id[:13], exc)
            session.truncated = True
            session.pending_infra = f"the session could not be rebuilt after an infrastructure error: {str(exc)[:200]}"
            session.infra_end = session.pending_infra

    def browser_lost(self, sessions: Iterable[Session], browser: Browser) -> None:
        """Rebuild every session that lived in a Chromium process that died."""
        for session in list(sessions):
            if session.lease.slot.browser is browser and not session.closed:
                if not session.lock.locked():  # an in-flight step reports the failure itself
                    session.pending_infra = "the browser process died; the session was rebuilt from its last state"
                metrics.INFRA_ERRORS.labels("browser_lost").inc()
                self.start(session)

    @staticmethod
    async def settled(session: Session) -> None:
        """Wait for a running recovery; then the session is usable (or marked truncated)."""
        if session.recovery is not None and not session.recovery.done():
            with contextlib.suppress(Exception):
                await session.recovery
        if session.closed:
            raise ServiceError(404, f"unknown session {session.id[:80]!r} (closed)")

    @staticmethod
    async def guarded(coro: Any) -> Any:
        """Run a page operation outside a step; a browser failure is a 503 that the client may retry."""
        try:
            return await coro
        except (PlaywrightError, InfraError, TimeoutError) as exc:
            raise ServiceError(503, f"the session's browser failed: {str(exc)[:200] or type(exc).__name__}") from None
