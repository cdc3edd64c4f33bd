"""HALO env service: browser sessions over REST (routes only; the loop lives in ``sessions.py``).

Playwright, the browser pool and the session manager are created in the app's lifespan and
reached through ``request.app.state``: nothing browser-related exists at module level.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import Response
from playwright.async_api import async_playwright

from halo.browser_guard import NoBrowserWrites
from halo.logging import setup_logging
from halo.schemas import (
    CreateSessionRequest,
    ForkRequest,
    ForkResponse,
    ResetResponse,
    SessionInfo,
    Snapshot,
    StepRequest,
    StepResponse,
    Task,
    ValidationResult,
)
from halo.schemas.env import CreateLeaseRequest, LeaseInfo, LeaseReleased
from halo.schemas.tasks import LeftOutTask, TaskReachability
from halo.screenshots import ScreenshotStore
from halo.service import ServiceError, add_health_routes, install_error_handlers
from halo.settings import log_settings
from halo.settings.env import EnvSettings
from halo_env.backends.base import TaskBackend
from halo_env.backends.local import LocalCloneBackend
from halo_env.backends.reachability import reachability
from halo_env.backends.real import RealBackend
from halo_env.pool import BrowserPool
from halo_env.sessions import SessionManager

# The restored session belongs to this lease (as a reset's ``lease_id`` does): closed when it expires.
LEASE_QUERY = "The owner's session lease (POST /leases); unset: the session lives until closed or idle"
MAX_BODY_BYTES = 32 * 1024 * 1024  # a snapshot carries a site's whole localStorage; nothing else is near this


def _manager(request: Request) -> SessionManager:
    return request.app.state.manager


Manager = Annotated[SessionManager, Depends(_manager)]


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
            store = ScreenshotStore(settings.screenshots_dir)
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

    @app.post("/sessions", response_model=ResetResponse, tags=["sessions"])
    async def create_session(body: CreateSessionRequest, m: Manager) -> ResetResponse:
        return await m.create(body)

    @app.post("/leases", response_model=LeaseInfo, tags=["leases"])
    async def create_lease(body: CreateLeaseRequest, m: Manager) -> LeaseInfo:
        return m.leases.create(body.owner).info()

    @app.get("/leases", response_model=list[LeaseInfo], tags=["leases"])
    async def list_leases(m: Manager) -> list[LeaseInfo]:
        return m.leases.list()

    @app.post("/leases/{lease_id}/heartbeat", response_model=LeaseInfo, tags=["leases"])
    async def heartbeat(lease_id: str, m: Manager) -> LeaseInfo:
        return m.renew_lease(lease_id)

    @app.delete("/leases/{lease_id}", response_model=LeaseReleased, tags=["leases"])
    async def release_lease(lease_id: str, m: Manager) -> LeaseReleased:
        return await m.release_lease(lease_id)

    @app.get("/sessions", response_model=list[SessionInfo], tags=["sessions"])
    async def list_sessions(m: Manager) -> list[SessionInfo]:
        return m.list()

    @app.post("/sessions/restore", response_model=ResetResponse, tags=["sessions"])
    async def restore_session(
        body: Snapshot,
        m: Manager,
        lease_id: Annotated[
            str | None, Query(min_length=8, max_length=80, pattern=r"^[A-Za-z0-9_\-]+$", description=LEASE_QUERY)
        ] = None,
    ) -> ResetResponse:
        return await m.restore(body, lease_id)

    @app.post("/sessions/{session_id}/step", response_model=StepResponse, tags=["sessions"])
    async def step(session_id: str, body: StepRequest, m: Manager) -> StepResponse:
        return await m.step(session_id, body.action)

    @app.post("/sessions/{session_id}/fork", response_model=ForkResponse, tags=["sessions"])
    async def fork(session_id: str, body: ForkRequest, m: Manager) -> ForkResponse:
        return await m.fork(session_id, body.n, body.method)

    @app.get("/sessions/{session_id}/snapshot", response_model=Snapshot, tags=["sessions"])
    async def snapshot(session_id: str, m: Manager) -> Snapshot:
        return await m.snapshot(session_id)

    @app.post("/sessions/{session_id}/validate", response_model=ValidationResult, tags=["sessions"])
    async def validate(session_id: str, m: Manager) -> ValidationResult:
        return await m.validate(session_id)

    @app.delete("/sessions/{session_id}", tags=["sessions"])
    async def close_session(session_id: str, m: Manager) -> dict:
        await m.close(session_id)
        return {"closed": session_id}

    @app.get("/screenshots/{sha256}", tags=["screenshots"], response_class=Response)
    async def screenshot(sha256: str, request: Request) -> Response:
        store: ScreenshotStore = request.app.state.store
        try:
            png = await asyncio.to_thread(store.get, sha256)
        except ValueError:
            raise ServiceError(422, "not a sha256 hex digest (64 lowercase hex characters)") from None
        except FileNotFoundError:
            raise ServiceError(404, f"no screenshot {sha256}") from None
        return Response(png, media_type="image/png", headers={"Cache-Control": "public, max-age=31536000, immutable"})

    @app.get("/tasks", response_model=list[Task], tags=["tasks"])
    async def tasks(
        m: Manager, domain: Annotated[str | None, Query(max_length=40, pattern=r"^[a-z0-9_\-]+$")] = None
    ) -> list[Task]:
        return m.tasks(domain)

    @app.get("/tasks/left-out", response_model=list[LeftOutTask], tags=["tasks"])
    async def tasks_left_out(m: Manager) -> list[LeftOutTask]:
        """REAL v2 tasks that do not run offline here, each with its reason (never faked)."""
        return m.left_out()

    @app.get("/tasks/reachability", response_model=list[TaskReachability], tags=["tasks"])
    async def tasks_reachability(
        m: Manager,
        domain: Annotated[str, Query(min_length=1, max_length=40, pattern=r"^[a-z0-9_\-]+$")],
        timeout_s: Annotated[float, Query(gt=0, le=30)] = 3.0,
    ) -> list[TaskReachability]:
        """Whether each of the domain's tasks' sites answers from here (one probe per origin)."""
        return await reachability(m.tasks(domain), m.backend_for, timeout_s)

    @app.get("/stats", tags=["ops"])
    async def stats(request: Request, m: Manager) -> dict:
        pool: BrowserPool = request.app.state.pool
        memory = await asyncio.to_thread(pool.memory_bytes)
        sessions = len(m.list())
        return {
            **pool.stats(),
            "sessions": sessions,
            "leases": len(m.leases),
            "leased_sessions": m.leases.leased_sessions,
            "browser_memory_bytes": memory,
            "memory_per_session_bytes": memory // sessions if sessions else None,
        }

    return app
