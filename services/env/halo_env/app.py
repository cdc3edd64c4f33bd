"""HALO env service: browser sessions over REST (the routes in ``routes/``; the loop lives in ``sessions.py``).

Playwright, the browser pool and the session manager are created in the app's lifespan and
reached through ``request.app.state`` (``routes/state.py``): nothing browser-related exists at
module level.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from playwright.async_api import async_playwright

from halo.browser_guard import NoBrowserWrites
from halo.logging import setup_logging
from halo.screenshots import screenshot_store
from halo.service import add_health_routes, install_error_handlers
from halo.settings import log_settings
from halo.settings.env import EnvSettings
from halo_env.backends.base import TaskBackend
from halo_env.backends.local import LocalCloneBackend
from halo_env.backends.real import RealBackend
from halo_env.pool import BrowserPool
from halo_env.routes import leases, ops, sessions, tasks
from halo_env.sessions import SessionManager

MAX_BODY_BYTES = 32 * 1024 * 1024  # a snapshot carries a site's whole localStorage; nothing else is near this


def default_backends(settings: EnvSettings) -> list[TaskBackend]:
    return [LocalCloneBackend(settings.sites_url), RealBackend(settings)]


def create_app(settings: EnvSettings | None = None, backends: list[TaskBackend] | None = None) -> FastAPI:
    settings = settings or EnvSettings()
    logger = setup_logging("env", settings.log_level)
    chosen = backends if backends is not None else default_backends(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        log_settings(settings, logger)
        async with async_playwright() as playwright:
            pool = BrowserPool(playwright, settings)
            store = screenshot_store(settings.screenshots_dir)
            manager = SessionManager(settings, pool, chosen, store)
            app.state.pool, app.state.manager, app.state.store = pool, manager, store
            reaper = asyncio.create_task(manager.reap_forever())
            try:
                yield
            finally:
                reaper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reaper
                await manager.close_all()
                await pool.close()
                logger.info("env service stopped: every session and browser closed")

    app = FastAPI(title="HALO env", lifespan=lifespan, redirect_slashes=False)
    install_error_handlers(app, max_body_bytes=MAX_BODY_BYTES)
    app.add_middleware(NoBrowserWrites, service="env")  # no web page may open or drive sessions

    async def probe_browser() -> None:
        await app.state.pool.probe()

    add_health_routes(app, "env", {"browser": probe_browser}, timeout_s=settings.launch_timeout_s)
    for module in (sessions, leases, ops, tasks):
        app.include_router(module.router)
    return app
