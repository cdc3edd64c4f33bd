"""Trainer service: the run API, the rollout workers and the run loop in one process.

Routes stay thin: they validate, refuse a mutation that is not the user's own (``guard``: its
content type, its origin, the bearer token), and hand over to ``RunManager``. Everything a client sends wrong is a 4xx with an ``ErrorResponse``.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager

import httpx
import redis.asyncio as aioredis
from fastapi import Depends, FastAPI, Request
from fastapi.responses import StreamingResponse

from halo.logging import setup_logging
from halo.schemas import RunEvent, RunSpec, RunState, RunStatus
from halo.schemas.promotion import PromoteRequest, PromoteResponse
from halo.screenshots import ScreenshotStore
from halo.service import ServiceError as HTTPError
from halo.service import add_health_routes, install_error_handlers, redis_check
from halo.settings import log_settings
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.guard import check_mutation
from halo_trainer.api.promotion import promote_version
from halo_trainer.api.runs import RunManager, RunRefused
from halo_trainer.observe.metrics import MetricsLog
from halo_trainer.observe.viewer.folders import RunFolders
from halo_trainer.observe.viewer.routes import mount_viewer
from halo_trainer.rollout.services import make_services
from halo_trainer.worker import work


def _http_check(client: httpx.AsyncClient, url: str):
    async def check() -> None:
        response = await client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")

    return check


def create_app(settings: TrainerSettings | None = None, eval_settings: EvalSettings | None = None) -> FastAPI:
    """``eval_settings``: where promoted adapters and evaluations live; by default the evaluation
    settings on the trainer's own data folder, so the runs promoted are the runs this trainer wrote."""
    settings = settings or TrainerSettings()
    evals = eval_settings or EvalSettings(data_dir=settings.data_dir)
    logger = setup_logging("trainer", settings.log_level)
    log_settings(settings, logger)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        redis = aioredis.from_url(settings.redis_url)
        services = make_services(settings, redis)
        store = ScreenshotStore(settings.screenshots_dir)
        manager = RunManager(settings, redis, services.policy, store, services.env)
        stop_workers = asyncio.Event()
        workers = [
            asyncio.create_task(work(f"trainer-worker-{i}", redis, services, settings, stop_workers))
            for i in range(settings.rollout_workers)
        ]
        app.state.manager = manager
        await manager.resume_interrupted()
        try:
            yield
        finally:
            await manager.shutdown()
            stop_workers.set()
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await services.env.aclose()
            await services.reward.aclose()
            await services.policy.aclose()
            await probes.aclose()
            await redis.aclose()

    app = FastAPI(title="HALO trainer", lifespan=lifespan)
    install_error_handlers(app)
    # The run viewer (/ui) reads run folders and screenshots only; its page uses /runs/{id}/events.
    mount_viewer(
        app,
        RunFolders(settings.runs_dir),
        ScreenshotStore(settings.screenshots_dir),
        live=True,
        evals_dir=evals.results_dir,
        token_required=bool(settings.api_token.get_secret_value()),
    )
    # One client for every readiness probe, made once: making one loads the CA bundle on the event
    # loop (0.5 s on a loaded 2-core machine), and a client per check per /ready stalled the whole
    # trainer, /health included, for seconds. No keep-alive: every probe tests a fresh connection.
    # 10 s: the env's /ready opens a page in a browser, which took 3-7 s under load (a 3 s limit made
    # the trainer flap between ready and not ready while nothing was wrong).
    probes = httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_keepalive_connections=0))
    add_health_routes(
        app,
        "trainer",
        {
            "redis": redis_check(settings.redis_url),
            "env": _http_check(probes, f"{settings.env_url}/ready"),
            "reward": _http_check(probes, f"{settings.reward_url}/ready"),
            "policy": _http_check(probes, f"{settings.policy_url}/health"),
        },
        timeout_s=12.0,
    )

    def authorize(request: Request) -> None:
        """Every state-changing route: only the user's own tools and pages may send it (``guard``)."""
        check_mutation(request, settings)

    def manager(request: Request) -> RunManager:
        return request.app.state.manager

    async def known_run(run_id: str, mgr: RunManager) -> RunStatus:
        status = await mgr.registry.get(run_id)
        if status is None:
            raise HTTPError(404, f"no run {run_id!r}")
        return status

    @app.post("/runs", status_code=201, response_model=RunStatus, dependencies=[Depends(authorize)], tags=["runs"])
    async def create_run(spec: RunSpec, request: Request) -> RunStatus:
        try:
            return await manager(request).create(spec)
        except RunRefused as exc:
            raise HTTPError(exc.status, str(exc)) from exc

    @app.get("/runs", response_model=list[RunStatus], tags=["runs"])
    async def list_runs(request: Request) -> list[RunStatus]:
        return await manager(request).registry.all()

    @app.get("/runs/{run_id}", response_model=RunStatus, tags=["runs"])
    async def get_run(run_id: str, request: Request) -> RunStatus:
        return await known_run(run_id, manager(request))

    @app.post("/runs/{run_id}/stop", response_model=RunStatus, dependencies=[Depends(authorize)], tags=["runs"])
    async def stop_run(run_id: str, request: Request) -> RunStatus:
        mgr = manager(request)
        status = await known_run(run_id, mgr)
        await mgr.stop(run_id)
        return status

    @app.post(
        "/runs/{run_id}/promote", response_model=PromoteResponse, dependencies=[Depends(authorize)], tags=["runs"]
    )
    async def promote_run(run_id: str, body: PromoteRequest) -> PromoteResponse:
        """Copy the run's adapter version (default: its newest) to its mode (default: its algorithm's),
        as `halo modes promote <mode> --run <run_id> [--version k]` does."""
        return await asyncio.to_thread(promote_version, evals, run_id, body)

    @app.get("/runs/{run_id}/metrics", tags=["runs"])
    async def run_metrics(run_id: str, request: Request) -> list[dict]:
        status = await known_run(run_id, manager(request))
        return MetricsLog(f"{status.run_dir}/metrics.jsonl").read()

    @app.get("/runs/{run_id}/events", tags=["runs"])
    async def run_events(run_id: str, request: Request) -> StreamingResponse:
        """Server-sent events: every status change of the run, then `done`, then the stream closes.

        A run that is over (stopped, finished, failed) and not training here gets its `done` even
        when its log holds none (a run marked stopped while no trainer ran it).
        """
        mgr = manager(request)
        await known_run(run_id, mgr)
        over = {RunState.STOPPED, RunState.FINISHED, RunState.FAILED}

        async def stream():
            last: str | None = None
            while not await request.is_disconnected():
                events = await mgr.registry.events(run_id, 0)
                # The log is capped (oldest trimmed), so positions shift: resume after the last event
                # sent, found by content (each status event carries its own timestamp).
                fresh = events
                if last is not None and last in events:
                    fresh = events[len(events) - events[::-1].index(last) :]
                for event in fresh:
                    last = event
                    kind = json.loads(event)["kind"]
                    yield f"event: {kind}\ndata: {event}\n\n"
                    if kind == "done":
                        return
                status = await mgr.registry.get(run_id)
                if not fresh and run_id not in mgr.active and (status is None or status.state in over):
                    state = status.state.value if status is not None else "unknown"
                    final = RunEvent(run_id=run_id, kind="done", data={"state": state}).model_dump_json()
                    yield f"event: done\ndata: {final}\n\n"
                    return
                await asyncio.sleep(1.0)

        return StreamingResponse(stream(), media_type="text/event-stream")

    return app
