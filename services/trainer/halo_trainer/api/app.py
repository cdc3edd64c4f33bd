"""Trainer service: the run API, the rollout workers and the run loop in one process.

Routes stay thin, one router each (``run_routes``: the runs; ``promotion``: a run's adapter to its
mode; the run viewer; health): they validate, refuse a mutation that is not the user's own
(``guard``: its content type, its origin, the bearer token), and hand over to ``RunManager``.
Everything a client sends wrong is a 4xx with an ``ErrorResponse``.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import httpx
import redis.asyncio as aioredis
from fastapi import FastAPI

from halo.logging import setup_logging
from halo.screenshots import ScreenshotStore, screenshot_store
from halo.service import add_health_routes, install_error_handlers, redis_check
from halo.settings import log_settings
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.node_services import NodeTaskProbe, node_ready_check
from halo_trainer.api.promotion import promotion_router
from halo_trainer.api.run_routes import runs_router
from halo_trainer.api.runs import RunManager
from halo_trainer.observe.viewer.folders import RunFolders
from halo_trainer.observe.viewer.routes import mount_viewer
from halo_trainer.rollout.services import make_services, policy_client
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
        store = screenshot_store(settings.screenshots_dir)
        # On a cluster a run's tasks are listed and probed on a running node's env, not on env_url.
        tasks_env = (
            services.env
            if settings.cluster_nodes is None
            else NodeTaskProbe(redis, settings.cluster_nodes, settings.request_timeout_s)
        )
        manager = RunManager(settings, redis, services.policy, store, tasks_env)
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
            if replicas_probe is not None:
                await replicas_probe.aclose()
            if nodes_redis is not None:
                await nodes_redis.aclose()
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
    # Over policy replicas there is no one URL to probe: ready while any live replica's engine answers.
    replicas_probe = policy_client(settings) if settings.policy_replicas is not None else None
    # Over rollout nodes, likewise: ready while any running node's env (and reward) answers.
    nodes_prefix = settings.cluster_nodes
    nodes_redis = aioredis.from_url(settings.redis_url) if nodes_prefix is not None else None

    def node_or_url(service: str, url: str):
        if nodes_prefix is None:
            return _http_check(probes, f"{url}/ready")
        return node_ready_check(nodes_redis, nodes_prefix, service, probes)

    add_health_routes(
        app,
        "trainer",
        {
            "redis": redis_check(settings.redis_url),
            "env": node_or_url("env", settings.env_url),
            "reward": node_or_url("reward", settings.reward_url),
            "policy": _http_check(probes, f"{settings.policy_url}/health")
            if replicas_probe is None
            else replicas_probe.health,
        },
        timeout_s=12.0,
    )

    app.include_router(runs_router(settings))
    app.include_router(promotion_router(settings, evals))
    return app
