"""Open a session's page in a freshly leased context and observe it: the one sequence behind a
reset, a fork, a restore and a recovery.

The page is brought to the session's state by rewinding a page parked at the clone's app
(``browser_state.rewind``, no page load), by restoring a captured browser state in a fresh context
(``browser_state.restore``, the clones), or by the task's reset followed by a replay of the
session's action prefix (replay-fork backends). The whole sequence runs under one budget that
grows with the prefix.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from halo.schemas import Observation
from halo.settings.env import EnvSettings
from halo_env import browser_state
from halo_env.executor import Pointer, execute
from halo_env.observation import PageObserver
from halo_env.session import ENDS_EPISODE, Session

logger = logging.getLogger("halo.env.sessions")


class PageOpener:
    def __init__(self, settings: EnvSettings, observer: PageObserver) -> None:
        self.s = settings
        self.observer = observer

    async def open(
        self,
        session: Session,
        state: dict[str, Any] | None,
        rewind: bool = False,
        like: Observation | None = None,
    ) -> tuple[Observation, dict[str, Any]]:
        """Bring ``session.lease`` to the session's state and observe it; raises on any browser failure.

        ``rewind``: the lease's page shows ``state``'s clone app already (a parked context);
        ``like``: the observation of that state when known (see ``PageObserver.observe``)."""
        budget = self.s.navigation_timeout_s * 2 + self.s.step_timeout_s * (1 + len(session.actions))
        await asyncio.wait_for(self._build(session, state, rewind), budget)
        return await asyncio.wait_for(self.observer.observe(session, like=like), self.s.step_timeout_s)

    async def _build(self, session: Session, state: dict[str, Any] | None, rewind: bool) -> None:
        """Rewind or restore a capture, or reset + replay."""
        lease = session.lease
        lease.guard.configure(session.backend.allowed_origins(session.task) | set(self.s.extra_allowed_origins))

        def on_popup(popup: Page) -> None:
            task = asyncio.ensure_future(self._follow_popup(session, popup))
            session.popups.add(task)
            session.popups_opened += 1
            task.add_done_callback(session.popups.discard)

        if lease.popup_listener is not None:  # a parked page still carries its previous session's
            lease.page.remove_listener("popup", lease.popup_listener)
        lease.popup_listener = on_popup
        lease.page.on("popup", on_popup)
        if state is not None and rewind:
            await browser_state.rewind(lease, state)
            return
        if state is not None:
            await browser_state.restore(lease, state)
            return
        await session.backend.setup(lease.page, session.task, session.run_id, session.seed)
        if session.actions:  # replay fork: the same actions from the same reset
            replay_pointer = Pointer()
            for action in session.actions:
                if action.action not in ENDS_EPISODE:
                    await execute(lease.page, action, self.observer.viewport, replay_pointer, self.s.default_wait_s)
                    await self.observer.settle(lease.page)
            session.pointer = replay_pointer

    async def _follow_popup(self, session: Session, popup: Page) -> None:
        """One tab per session: a link that opens a new tab is followed in the session's own tab."""
        timeout_ms = self.s.navigation_timeout_s * 1000
        with contextlib.suppress(PlaywrightError):
            await popup.wait_for_load_state("commit", timeout=timeout_ms)
        if not popup.url.startswith("http"):
            # A target=_blank tab can report "commit" for its initial about:blank before the link's
            # own navigation starts (seen under load): wait for the link's URL, not the blank page.
            with contextlib.suppress(PlaywrightError):
                await popup.wait_for_url(lambda u: u.startswith("http"), wait_until="commit", timeout=timeout_ms)
        url = popup.url
        if not url.startswith("http"):
            logger.warning("a new tab never left %r: not followed", url[:80])
        with contextlib.suppress(PlaywrightError):
            await popup.close()
        if url.startswith("http") and session.lease.guard.allows(url) and not session.lease.page.is_closed():
            with contextlib.suppress(PlaywrightError):
                await session.lease.page.goto(url, wait_until="commit")
