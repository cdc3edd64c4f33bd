"""The local clone server: every site under its own prefix, speaking REAL's /config and /finish.

Routes per site ``<site>`` (a folder in ``halo_sites/sites/``):
  GET /<site>/                  the app (static index.html; state in the browser)
  GET /<site>/static/<file>     the app's assets
  GET /<site>/config?task_id=&run_id=&seed=   reset the browser state to the task's initial state
  GET /<site>/finish            the state as JSON in a <pre> (initialfinaldiff, differences, progress)
Shared: /common/halo.js (the clone runtime), /api/tasks[?site=], /api/tasks/{task_id}, /health, /ready.

REAL's own hosts: a request whose Host is one of REAL's sites (``real-<site>-....vercel.app``, through
``halo_sites.real_proxy``) is served as that site's, at the root as REAL serves it (``/config``,
``/finish``, ``/``), and /config takes REAL's task ids (``v2.<site>-<n>``): agisdk's harness runs on
the clones unmodified (docs/sites.md).
"""

from __future__ import annotations

import re

from fastapi import FastAPI, Query
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from halo.logging import setup_logging
from halo.schemas import Task
from halo.service import ServiceError, add_health_routes, install_error_handlers
from halo.settings import log_settings
from halo.settings.sites import SitesSettings
from halo_sites import pages
from halo_sites.tasks import PACKAGE_DIR, get_task, load_tasks, real_site_hosts, resolve_task_id, site_dir, site_names

# Pages are regenerated per request and their state lives in storage: never serve a stale copy.
_NO_STORE = {"Cache-Control": "no-store"}


class RealHostPaths:
    """Serves a REAL host's paths as its site's: ``//config`` (agisdk joins its url, which ends in a
    slash, and ``/config``) becomes ``/<site>/config``; the clones' own absolute paths stay."""

    def __init__(self, app, hosts: dict[str, str]) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").rsplit(":", 1)[0]
            site = self.hosts.get(host)
            if site is not None:
                path = re.sub("/{2,}", "/", scope["path"])
                if not (path.startswith((f"/{site}/", "/common/")) or path == f"/{site}"):
                    path = f"/{site}{path}"
                scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)


def create_app(settings: SitesSettings | None = None) -> FastAPI:
    settings = settings or SitesSettings()
    logger = setup_logging("sites", settings.log_level)
    log_settings(settings, logger)
    sites = site_names()
    tasks_by_site = {s: len(load_tasks(s)) for s in sites}  # loads and checks every task file now
    logger.info("serving sites %s", tasks_by_site)

    app = FastAPI(title="HALO sites")
    install_error_handlers(app)
    app.add_middleware(RealHostPaths, hosts=real_site_hosts())

    async def _tasks_load() -> None:
        load_tasks()

    add_health_routes(app, "sites", {"tasks": _tasks_load})
    app.mount("/common", StaticFiles(directory=PACKAGE_DIR / "static" / "common"), name="common")
    for site in sites:
        app.mount(f"/{site}/static", StaticFiles(directory=site_dir(site) / "static"), name=f"{site}-static")

    def _site(site: str) -> str:
        if site not in sites:
            raise ServiceError(404, f"unknown site {site!r}; sites: {', '.join(sites)}")
        return site

    @app.get("/", response_class=HTMLResponse)
    async def index() -> HTMLResponse:
        return HTMLResponse(pages.index_page(tasks_by_site))

    @app.get("/api/tasks")
    async def list_tasks(site: str | None = Query(None, description="only this site's tasks")) -> list[Task]:
        return load_tasks(_site(site) if site else None)

    @app.get("/api/tasks/{task_id}")
    async def one_task(task_id: str) -> Task:
        try:
            return get_task(task_id)
        except KeyError as exc:
            raise ServiceError(404, str(exc.args[0])) from None

    @app.get("/{site}", include_in_schema=False)
    async def site_root(site: str) -> RedirectResponse:
        return RedirectResponse(f"/{_site(site)}/")

    @app.get("/{site}/", response_class=FileResponse)
    async def site_app(site: str) -> FileResponse:
        return FileResponse(site_dir(_site(site)) / "static" / "index.html", headers=_NO_STORE)

    @app.get("/{site}/config", response_class=HTMLResponse)
    async def site_config(
        site: str,
        task_id: str | None = Query(
            None,
            max_length=120,
            description="local.<site>-<n>, real-offline.<site>-<n> or v2.<site>-<n>; none = default",
        ),
        run_id: str = Query("0", max_length=80),
        seed: int = Query(0, ge=0, le=2**31 - 1, description="layout/data seed (see docs/sites.md)"),
    ) -> HTMLResponse:
        site = _site(site)
        config: dict = {}
        if task_id:
            task_id = resolve_task_id(task_id)
            try:
                task = get_task(task_id)
            except KeyError as exc:
                raise ServiceError(404, str(exc.args[0])) from None
            if task.domain != site:
                raise ServiceError(404, f"task {task_id!r} belongs to site {task.domain!r}, not {site!r}")
            config = task.config
        params = {"task_id": task_id, "run_id": run_id, "seed": seed, "config": config}
        start = f"/{site}/" + str(config.get("start_hash", ""))
        return HTMLResponse(pages.config_page(site, params, start), headers=_NO_STORE)

    @app.get("/{site}/finish", response_class=HTMLResponse)
    async def site_finish(site: str) -> HTMLResponse:
        return HTMLResponse(pages.finish_page(_site(site)), headers=_NO_STORE)

    return app
