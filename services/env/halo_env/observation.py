"""Observe a session's page: let it settle, read it (url, ids, accessibility tree, site state, the
browser state a recovery needs) in one script, take its screenshot, store the PNG by hash."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from halo.schemas import ErrorKind, Observation, ScreenshotRef, Viewport
from halo.screenshots import ScreenshotStore
from halo.service import replace_lone_surrogates
from halo.settings.env import EnvSettings
from halo_env import metrics
from halo_env.executor import Pointer
from halo_env.page_js import OBSERVE
from halo_env.session import Session

_CAPTURE_REFUSED = "Unable to capture screenshot"
_NAVIGATING = ("Execution context was destroyed", "navigation", "Cannot find context")


class PageObserver:
    def __init__(self, settings: EnvSettings, store: ScreenshotStore, viewport: Viewport, public_url: str) -> None:
        self.s = settings
        self.store = store
        self.viewport = viewport
        self.public_url = public_url

    async def settle(self, page: Page) -> None:
        """Give the page time to react, and to finish a navigation the action started."""
        await asyncio.sleep(self.s.settle_ms / 1000)
        with contextlib.suppress(PlaywrightTimeoutError):
            await page.wait_for_load_state("load", timeout=self.s.navigation_timeout_s * 1000)

    async def observe(
        self,
        session: Session,
        error: str | None = None,
        step: int | None = None,
        pointer: Pointer | None = None,
        like: Observation | None = None,
    ) -> tuple[Observation, dict[str, Any]]:
        """The observation of the page as it is now, and the checkpoint to rebuild it from.

        ``like``: the observation the page should equal (a rewind's source). When the page reads
        the same (url, ids and accessibility tree, site state), its screenshot is reused instead of
        taken: a rewind is exact (tests/env/test_local_clones.py), and the screenshot is most of an
        observation's cost. When anything differs, the page is captured as usual."""
        lease = session.lease
        cookies_read = asyncio.ensure_future(lease.context.cookies())  # overlaps the page's reading
        try:
            raw = await self._evaluate(lease.page) if like is not None else None
            if like is not None and raw is not None and _reads_like(raw, like):
                sha = like.screenshot.sha256
            else:
                raw, png = await self._capture(session)
                sha = self.store.put(png)
            cookies = await cookies_read
        finally:
            if not cookies_read.done():
                cookies_read.cancel()
        blocked, navigation = lease.guard.drain()
        metrics.BLOCKED.inc(len(blocked))
        if navigation is not None and error is None:
            error = f"navigation to {navigation[:200]} was blocked: only the task's site may be opened"
        p = pointer or session.pointer
        obs = Observation(
            session_id=session.id,
            task_id=session.task.id,
            goal=session.task.goal,
            step=session.step if step is None else step,
            url=raw["url"],
            title=(raw.get("title") or "")[:300],
            screenshot=ScreenshotRef(
                sha256=sha,
                width=self.viewport.width,
                height=self.viewport.height,
                url=f"{self.public_url}/screenshots/{sha}",
            ),
            axtree=raw.get("axtree") or "",
            last_action_error=error,
            last_action_error_kind=ErrorKind.AGENT if error else None,
            answer=session.answer,
            site_state=raw.get("siteState") if isinstance(raw.get("siteState"), dict) else None,
            blocked_requests=blocked,
            terminated=session.terminated,
            truncated=session.truncated,
        )
        checkpoint = {"url": raw["url"], "cookies": cookies, "page": raw.get("state"), "pointer": [p.x, p.y]}
        return obs, checkpoint

    async def _capture(self, session: Session) -> tuple[dict[str, Any], bytes]:
        """Read the page (url, ids, AX tree, site state) and take its screenshot.

        The script and the screenshot run at once: the script runs in the renderer, the capture
        and PNG encoding mostly outside it, and the script changes no pixels (it sets ids as data
        attributes, which no clone styles).

        Chromium can refuse a capture ("Unable to capture screenshot") in the moment a link with
        target=_blank opens its new tab, before Playwright's `popup` event has reached the session's
        popup handler (seen under load in the full test run); under load the capture can also wait
        out its timeout while the new tab is in front. Neither is a broken browser: fold the popup
        in, make sure the session's tab is in front and read the page again. A timeout with no new
        tab during the capture is a hung page and is raised, for the recovery to rebuild.
        """
        page = session.lease.page
        for attempt in range(3):
            opened = session.popups_opened
            raw, png = await asyncio.gather(
                self._evaluate(page),
                page.screenshot(type="png", caret="hide", animations=self.s.screenshot_animations),
                return_exceptions=True,
            )
            if isinstance(raw, BaseException):
                raise raw
            if not isinstance(png, BaseException):
                return raw, png
            refused = isinstance(png, PlaywrightError) and _CAPTURE_REFUSED in str(png)
            new_tab_in_front = isinstance(png, PlaywrightTimeoutError) and (
                session.popups or session.popups_opened != opened
            )
            if attempt == 2 or not (refused or new_tab_in_front):
                raise png
            await asyncio.sleep(self.s.settle_ms / 1000)  # time for the popup event to arrive
            if session.popups:
                await asyncio.gather(*session.popups, return_exceptions=True)
                await self.settle(page)
            await page.bring_to_front()
        raise AssertionError("unreachable")

    async def _evaluate(self, page: Page) -> dict[str, Any]:
        for attempt in range(3):
            try:
                raw = await asyncio.wait_for(
                    page.evaluate(OBSERVE, {"maxChars": self.s.axtree_max_chars, "capture": True}),
                    self.s.evaluate_timeout_s,
                )
                # A page's text may hold lone surrogates (JavaScript strings allow them); they
                # cannot be encoded into the answer, so they become U+FFFD here, where they enter.
                return replace_lone_surrogates(raw)
            except PlaywrightError as exc:  # a navigation replaced the document under the script: observe the new one
                if attempt == 2 or not any(m in str(exc) for m in _NAVIGATING):
                    raise
                with contextlib.suppress(PlaywrightTimeoutError):
                    await page.wait_for_load_state("load", timeout=self.s.navigation_timeout_s * 1000)
        raise AssertionError("unreachable")


def _reads_like(raw: dict[str, Any], obs: Observation) -> bool:
    site_state = raw.get("siteState") if isinstance(raw.get("siteState"), dict) else None
    return (
        raw["url"] == obs.url
        and (raw.get("axtree") or "") == obs.axtree
        and (raw.get("title") or "")[:300] == obs.title
        and site_state == obs.site_state
    )
