"""A bounded pool of Chromium processes and the browser contexts (one per session) they host.

Bounds: at most ``max_browsers`` processes and ``max_contexts_per_browser`` contexts each; a new
session waits ``acquire_timeout_s`` for a free slot and is then refused (503, an infrastructure condition the caller may retry). A process that dies
(killed, OOM) is noticed through Playwright's ``disconnected`` event, dropped from the pool, and
replaced on the next acquire; sessions that lived in it are told through ``on_browser_lost`` so
they can rebuild themselves elsewhere. A process is retired after handing out
``contexts_per_browser_lifetime`` contexts (Chromium leaks over thousands of contexts), and a
context is closed after ``episodes_per_context`` episodes (cleared between them when reused).

Parked contexts: a closed session whose page shows a local clone's app can be parked instead of
closed (up to ``parked_contexts``, oldest evicted first, each reused ``rewinds_per_context``
times). A later reset or fork of a session on the same app takes it and rewinds the page to its
state in place (``browser_state.rewind``), skipping the page load that dominates a fresh context.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from playwright.async_api import Browser, BrowserContext, Page, Playwright
from playwright.async_api import Error as PlaywrightError

from halo.settings.env import EnvSettings
from halo_env.allowlist import NetworkGuard
from halo_env.memory import pids_with_arg, tree_memory_bytes

logger = logging.getLogger("halo.env.pool")


class PoolExhausted(Exception):
    """Every context slot is taken and none freed up in time."""


@dataclass(eq=False)
class _BrowserSlot:
    browser: Browser
    marker: str  # a Chromium switch only this process carries, to find its pids in /proc
    in_use: int = 0
    parked: int = 0
    handed_out: int = 0
    alive: bool = True
    idle: list[Lease] = field(default_factory=list)  # cleared contexts waiting for reuse

    @property
    def retiring(self) -> bool:
        return not self.alive


@dataclass(eq=False)
class Lease:
    """One browser context with its single page, lent to one session."""

    slot: _BrowserSlot
    context: BrowserContext
    page: Page
    guard: NetworkGuard
    episodes: int = 0
    crashed: bool = False
    released: bool = False
    app_url: str | None = None  # set when handed out parked: the clone app its page shows, ready to rewind
    rewinds: int = 0
    popup_listener: Callable[[Page], None] | None = None  # the session's, replaced when the page is reused

    @property
    def alive(self) -> bool:
        return self.slot.alive and not self.crashed and not self.page.is_closed()


class BrowserPool:
    def __init__(self, playwright: Playwright, settings: EnvSettings) -> None:
        self._pw = playwright
        self._s = settings
        self._slots: list[_BrowserSlot] = []
        self._capacity = asyncio.Semaphore(settings.max_browsers * settings.max_contexts_per_browser)
        self._launch_lock = asyncio.Lock()
        self._closing = False
        self.on_browser_lost: Callable[[Browser], None] | None = None
        self._top_up_task: asyncio.Task | None = None
        self._parked: dict[str, list[Lease]] = {}  # app url -> parked leases, oldest first
        self.browsers_launched = 0
        self.browsers_lost = 0

    # -- browsers -------------------------------------------------------------------------------
    async def _launch(self) -> _BrowserSlot:
        marker = f"--halo-browser={secrets.token_hex(8)}"
        browser = await asyncio.wait_for(
            self._pw.chromium.launch(
                executable_path=self._s.chromium_path or None,
                headless=self._s.headless,
                args=[*self._s.chromium_args, marker],
            ),
            self._s.launch_timeout_s,
        )
        slot = _BrowserSlot(browser=browser, marker=marker)
        browser.on("disconnected", lambda _b: self._lost(slot))
        self._slots.append(slot)
        self.browsers_launched += 1
        logger.info("launched chromium %s (%d running)", marker, len(self._slots))
        return slot

    def _lost(self, slot: _BrowserSlot) -> None:
        if not slot.alive:
            return
        slot.alive = False
        if slot in self._slots:
            self._slots.remove(slot)
        if self._closing:
            return
        self.browsers_lost += 1
        logger.warning("chromium %s disconnected; it will be replaced", slot.marker)
        if self.on_browser_lost is not None:
            self.on_browser_lost(slot.browser)

    async def _slot_with_room(self) -> _BrowserSlot:
        async with self._launch_lock:
            # Fill one process before starting the next: memory is scarcer than parallelism here.
            candidates = [
                s
                for s in self._slots
                if s.alive
                and s.in_use + len(s.idle) + s.parked < self._s.max_contexts_per_browser
                and s.handed_out < self._s.contexts_per_browser_lifetime
            ]
            if candidates:
                return max(candidates, key=lambda s: s.in_use)
            if len(self._slots) < self._s.max_browsers:
                return await self._launch()
            # A parked page gives way to a session that needs a context.
            for s in self._slots:
                if s.alive and s.parked and s.handed_out < self._s.contexts_per_browser_lifetime:
                    await self._evict_parked(s)
                    return s
            # Every live process is full or retiring; a retiring one with no sessions can go now.
            for s in list(self._slots):
                if s.in_use == 0:
                    await self._retire(s)
            if len(self._slots) < self._s.max_browsers:
                return await self._launch()
        raise PoolExhausted("no browser has room")

    async def _retire(self, slot: _BrowserSlot) -> None:
        slot.alive = False
        if slot in self._slots:
            self._slots.remove(slot)
        with contextlib.suppress(PlaywrightError, TimeoutError):
            await asyncio.wait_for(slot.browser.close(), 10)
        logger.info("retired chromium %s after %d contexts", slot.marker, slot.handed_out)

    # -- contexts -------------------------------------------------------------------------------
    async def acquire(self, app_url: str | None = None) -> Lease:
        """A fresh (or cleared) context with one page; ``PoolExhausted`` after ``acquire_timeout_s``.

        With ``app_url``, a context parked at that clone app is preferred: then ``lease.app_url``
        equals it (the caller rewinds the page instead of loading it); otherwise it is None. The
        key is ``browser_state.rewind_key``'s: the app document and the data set it loaded."""
        if self._closing:
            raise PoolExhausted("the pool is shutting down")
        try:
            await asyncio.wait_for(self._capacity.acquire(), self._s.acquire_timeout_s)
        except TimeoutError as exc:
            raise PoolExhausted(
                f"all {self._s.max_browsers * self._s.max_contexts_per_browser} browser contexts are in use"
            ) from exc
        try:
            lease = await self._unpark(app_url) if app_url else None
            if lease is None:
                lease = await self._new_or_reused()
                lease.app_url = None
        except BaseException:
            self._capacity.release()
            raise
        lease.episodes += 1
        return lease

    def parked_at(self, app_url: str) -> int:
        """How many contexts are parked at ``app_url`` now: what ``acquire(app_url)`` can rewind."""
        return len(self._parked.get(app_url) or [])

    async def _unpark(self, app_url: str) -> Lease | None:
        parked = self._parked.get(app_url) or []
        while parked:
            lease = parked.pop()  # the most recently parked: its page is the warmest
            lease.slot.parked -= 1
            if lease.alive and not lease.slot.retiring:
                lease.slot.in_use += 1
                lease.released = False
                lease.rewinds += 1
                return lease
            await self._close_context(lease)
        return None

    async def park(self, lease: Lease, app_url: str) -> None:
        """Keep a closed session's context open at ``app_url`` for a later rewind, or release it."""
        if lease.released:
            return
        if (
            self._s.parked_contexts == 0
            or self._closing
            or not lease.alive
            or lease.rewinds >= self._s.rewinds_per_context
            or lease.slot.handed_out >= self._s.contexts_per_browser_lifetime
        ):
            await self.release(lease, reusable=False)
            return
        lease.released = True
        lease.app_url = app_url
        slot = lease.slot
        slot.in_use = max(0, slot.in_use - 1)
        slot.parked += 1
        self._parked.setdefault(app_url, []).append(lease)
        self._capacity.release()
        while sum(len(v) for v in self._parked.values()) > self._s.parked_contexts:
            await self._evict_parked(None)

    async def _evict_parked(self, slot: _BrowserSlot | None) -> None:
        """Close the oldest parked context (of ``slot``, or of any browser)."""
        for url, leases in self._parked.items():
            for lease in leases:
                if slot is None or lease.slot is slot:
                    leases.remove(lease)
                    if not leases:
                        del self._parked[url]
                    lease.slot.parked -= 1
                    await self._close_context(lease)
                    return

    async def _new_or_reused(self) -> Lease:
        for slot in self._slots:
            while slot.alive and slot.idle:
                lease = slot.idle.pop(0)
                if lease.alive:
                    slot.in_use += 1
                    lease.released = False
                    self._schedule_top_up()
                    return lease
                await self._close_context(lease)
        slot = await self._slot_with_room()
        slot.in_use += 1
        try:
            lease = await self._create(slot)
        except BaseException:
            slot.in_use -= 1
            raise
        self._schedule_top_up()
        return lease

    async def _create(self, slot: _BrowserSlot) -> Lease:
        slot.handed_out += 1
        context = await slot.browser.new_context(
            viewport={"width": self._s.viewport_width, "height": self._s.viewport_height},
            device_scale_factor=1,
            locale="en-US",
            timezone_id="UTC",
            service_workers="block",  # a service worker's requests would bypass the allowlist
            accept_downloads=False,
        )
        try:
            context.set_default_timeout(self._s.action_timeout_s * 1000)
            context.set_default_navigation_timeout(self._s.navigation_timeout_s * 1000)
            guard = NetworkGuard()
            await guard.install(context)
            page = await context.new_page()
        except BaseException:
            with contextlib.suppress(PlaywrightError):
                await context.close()
            raise
        lease = Lease(slot=slot, context=context, page=page, guard=guard)
        page.on("crash", lambda _p: setattr(lease, "crashed", True))
        return lease

    def _schedule_top_up(self) -> None:
        if self._s.warm_contexts and not self._closing and (self._top_up_task is None or self._top_up_task.done()):
            self._top_up_task = asyncio.create_task(self._top_up())

    async def _top_up(self) -> None:
        """Keep ``warm_contexts`` fresh contexts ready in running browsers, off the reset's critical path."""
        try:
            while not self._closing and sum(len(s.idle) for s in self._slots) < self._s.warm_contexts:
                room = [
                    s
                    for s in self._slots
                    if s.alive
                    and s.in_use + len(s.idle) + s.parked < self._s.max_contexts_per_browser
                    and s.handed_out < self._s.contexts_per_browser_lifetime
                ]
                if not room:  # never launch a browser just to warm contexts
                    return
                slot = max(room, key=lambda s: s.in_use)
                lease = await self._create(slot)
                if slot.alive and not self._closing:
                    slot.idle.append(lease)
                else:
                    await self._close_context(lease)
        except (PlaywrightError, TimeoutError) as exc:
            logger.info("warming a context failed: %s", exc)

    async def release(self, lease: Lease, reusable: bool = True) -> None:
        """Give a context back: cleared for reuse while it has episodes left, else closed. Idempotent."""
        if lease.released:
            return
        lease.released = True
        slot = lease.slot
        try:
            if (
                reusable
                and lease.alive
                and not self._closing
                and lease.episodes < self._s.episodes_per_context
                and await self._clear(lease)
            ):
                slot.idle.append(lease)
            else:
                await self._close_context(lease)
        finally:
            slot.in_use = max(0, slot.in_use - 1)
            self._capacity.release()
        if slot.alive and slot.in_use == 0 and slot.handed_out >= self._s.contexts_per_browser_lifetime:
            for idle in slot.idle:
                await self._close_context(idle)
            slot.idle.clear()
            await self._retire(slot)

    async def _clear(self, lease: Lease) -> bool:
        """Forget everything a context learned (cookies, storage of every origin, the tab)."""
        try:
            async with asyncio.timeout(self._s.action_timeout_s):
                await lease.context.clear_cookies()
                old = lease.page
                lease.page = await lease.context.new_page()
                lease.page.on("crash", lambda _p: setattr(lease, "crashed", True))
                await old.close()
                cdp = await lease.context.new_cdp_session(lease.page)
                for origin in lease.guard.visited:
                    origin = origin.removesuffix(":443" if origin.startswith("https:") else ":80")
                    await cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
                await cdp.detach()
                lease.guard.visited.clear()
                lease.guard.configure(set())
            return True
        except (PlaywrightError, TimeoutError):
            return False

    async def _close_context(self, lease: Lease) -> None:
        # Closing the context kills its renderers, even one stuck in `while (true) {}`.
        with contextlib.suppress(PlaywrightError, TimeoutError):
            await asyncio.wait_for(lease.context.close(), self._s.action_timeout_s)

    async def discard(self, lease: Lease) -> None:
        """Close a context that must not be reused (hung, crashed), without waiting on it long."""
        await self.release(lease, reusable=False)

    # -- health, stats, shutdown ----------------------------------------------------------------
    async def probe(self) -> None:
        """Readiness: a running browser (the pool's first is launched if none runs) opens a page and
        runs a script. A full pool is still ready: the probe's context is outside the bounds."""
        alive = [s for s in self._slots if s.alive]
        slot = alive[0] if alive else await self._slot_with_room()
        context = await slot.browser.new_context()
        try:
            page = await context.new_page()
            await page.set_content("<p id=ok>ok</p>")
            if await page.evaluate("() => document.getElementById('ok').textContent") != "ok":
                raise RuntimeError("the probe page did not render")
        finally:
            await context.close()

    def pids(self) -> list[int]:
        """Main Chromium process ids of the pool (renderers are their descendants)."""
        return [pid for s in self._slots for pid in pids_with_arg(s.marker)]

    def memory_bytes(self) -> int:
        return tree_memory_bytes(self.pids())

    def stats(self) -> dict:
        return {
            "browsers": len(self._slots),
            "contexts_in_use": sum(s.in_use for s in self._slots),
            "contexts_idle": sum(len(s.idle) for s in self._slots),  # warm or cleared, ready to lend
            "contexts_parked": sum(s.parked for s in self._slots),  # at a clone's app, ready to rewind
            "capacity": self._s.max_browsers * self._s.max_contexts_per_browser,
            "browsers_launched": self.browsers_launched,
            "browsers_lost": self.browsers_lost,
        }

    async def close(self) -> None:
        self._closing = True
        if self._top_up_task is not None:
            self._top_up_task.cancel()
            with contextlib.suppress(BaseException):
                await self._top_up_task
        for slot in list(self._slots):
            slot.alive = False
            with contextlib.suppress(PlaywrightError, TimeoutError):
                await asyncio.wait_for(slot.browser.close(), 10)
        self._slots.clear()
