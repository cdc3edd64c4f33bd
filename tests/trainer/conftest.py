"""Fixtures of the trainer tests: a Redis of their own, and a stand-in for vLLM's admin routes.

The run loop's job stream (``halo:rollout:jobs``) is one key for every run: on the shared test
Redis, the workers of another test's stack would take these tests' jobs. So the tests that run
the loop start their own ``redis-server`` on a free port.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from tests import lifetime
from tests.conftest import free_port


@pytest.fixture(scope="module")
def own_redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    folder: Path = tmp_path_factory.mktemp("redis")
    proc = lifetime.popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture
def clean_redis(own_redis_url: str) -> str:
    redis.Redis.from_url(own_redis_url).flushdb()
    return own_redis_url


class AdminStandIn:
    """vLLM's ``/health``, ``/v1/models`` and runtime LoRA routes, nothing else (no sampling).

    The loop only manages adapters; the fast tier cannot start vLLM, and its restart is what is
    simulated here (``restart`` forgets every adapter, as a restarted vLLM does). The real server
    is killed and restarted in tests/e2e/test_faults.py.
    """

    def __init__(self, base_model: str = "halo-base", root: str = "", weight_reload: bool = False) -> None:
        self.base_model = base_model
        self.root = root  # what /v1/models says the base model was loaded from
        self.adapters: set[str] = set()
        self.loads: list[str] = []
        self.reloads: list[str] = []  # weights folders reloaded in place (dev mode's /collective_rpc)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        app = FastAPI()

        @app.get("/health")
        async def health() -> dict:
            return {}

        @app.get("/v1/models")
        async def models() -> dict:
            base = {"id": base_model, "root": self.root}
            return {"data": [base] + [{"id": a, "parent": base_model} for a in sorted(self.adapters)]}

        @app.post("/v1/load_lora_adapter")
        async def load(body: dict) -> JSONResponse:
            if body["lora_name"] in self.adapters:
                return JSONResponse({"error": {"message": "already loaded"}}, status_code=400)
            self.adapters.add(body["lora_name"])
            self.loads.append(body["lora_name"])
            return JSONResponse({})

        @app.post("/v1/unload_lora_adapter")
        async def unload(body: dict) -> JSONResponse:
            if body["lora_name"] not in self.adapters:
                return JSONResponse({"error": {"message": "not found"}}, status_code=404)
            self.adapters.discard(body["lora_name"])
            return JSONResponse({})

        if weight_reload:  # vLLM's dev-mode routes, as PolicyClient.publish_weights / reload_weights call them

            @app.post("/collective_rpc")
            async def collective_rpc(body: dict) -> JSONResponse:
                path = body["kwargs"]["weights_path"]
                if body["method"] != "reload_weights" or not (Path(path) / "config.json").exists():
                    return JSONResponse({"error": {"message": f"cannot reload {path}"}}, status_code=400)
                self.reloads.append(path)
                return JSONResponse({"results": [None]})

            @app.post("/pause")
            @app.post("/resume")
            @app.post("/abort_requests")
            async def control() -> dict:
                return {}

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))

    def restart(self) -> None:
        self.adapters.clear()


@contextlib.asynccontextmanager
async def serving(stand_in: AdminStandIn) -> AsyncIterator[AdminStandIn]:
    task = asyncio.create_task(stand_in.server.serve())
    while not stand_in.server.started:
        await asyncio.sleep(0.05)
    yield stand_in
    stand_in.server.should_exit = True
    with contextlib.suppress(asyncio.CancelledError):
        await task


@pytest.fixture
async def vllm_admin() -> AsyncIterator[AdminStandIn]:
    async with serving(AdminStandIn()) as stand_in:
        yield stand_in


@pytest.fixture
async def vllm_admin_reload() -> AsyncIterator[AdminStandIn]:
    """The stand-in with dev mode's weight-reload routes (a full-weights run's server)."""
    async with serving(AdminStandIn(weight_reload=True)) as stand_in:
        yield stand_in


@pytest.fixture(scope="session")
def base_model(tiny_model_dir):
    """The tiny Qwen3-VL loaded once; every loop test's learner takes its own copy (``new_learner``)."""
    from halo_model.loading import load_model

    return load_model(tiny_model_dir)
