"""A run's end survives Redis going away at that moment: recorded, and its watchers told, once Redis
is back; and no run task outlives the manager that started it.

A real ``redis-server`` of the test's own, stopped and started again on the same port (no
persistence: what is there afterwards was written after the restart). The run fails at its first
check (the served model), the quickest real end; Redis is stopped just before that failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis

from halo.policy_client import PolicyClient
from halo.schemas import RunSpec, RunState
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.runs import ModelMismatch, RunManager
from tests import lifetime
from tests.conftest import free_port
from tests.trainer.stand_ins import EnvStandIn


class RedisServer:
    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = lifetime.popen(argv, cwd=self.folder, stdout=subprocess.DEVNULL)
        client, deadline = redis.Redis.from_url(self.url), time.monotonic() + 30
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                assert self.proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


@pytest.fixture
def redis_server(tmp_path: Path):
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


async def test_a_run_that_ends_while_redis_is_down_is_recorded_once_redis_is_back(redis_server, tmp_path, caplog):
    settings = TrainerSettings(_env_file=None, data_dir=tmp_path / "data", redis_url=redis_server.url)
    client = aioredis.from_url(redis_server.url)
    policy = PolicyClient("http://127.0.0.1:9", "halo-base", max_retries=0)
    manager = RunManager(settings, client, policy, ScreenshotStore(tmp_path / "shots"), EnvStandIn())
    down = asyncio.Event()

    async def redis_goes_then_the_run_fails() -> None:
        await asyncio.to_thread(redis_server.stop)
        down.set()
        raise ModelMismatch("the run's end, with Redis down")

    manager.check_served_model = redis_goes_then_the_run_fails
    try:
        created = await manager.create(RunSpec(domain="playground", tasks=["local.playground-1"], episodes=4))
        await asyncio.wait_for(down.wait(), 30)
        await asyncio.sleep(2.0)  # a few failed tries of the end's record
        assert manager.busy() == created.run_id  # busy until its end is recorded
        await asyncio.to_thread(redis_server.start)
        deadline = time.monotonic() + 30
        while manager.busy() is not None:
            assert time.monotonic() < deadline, "the end was never recorded"
            await asyncio.sleep(0.1)
        status = await manager.registry.get(created.run_id)
        assert status.state is RunState.FAILED and "Redis down" in status.error
        events = await manager.registry.events(created.run_id, 0)
        assert '"kind":"done"' in events[-1] and '"failed"' in events[-1]
        assert "but Redis did not take it" in caplog.text
    finally:
        await manager.shutdown()
        await policy.aclose()
        await client.aclose()


async def test_a_shutdown_ends_every_run_task_it_started(redis_server, tmp_path):
    """Also the one recording its end: no task is left to fail on a closed Redis after the test."""
    settings = TrainerSettings(_env_file=None, data_dir=tmp_path / "data", redis_url=redis_server.url)
    client = aioredis.from_url(redis_server.url)
    policy = PolicyClient("http://127.0.0.1:9", "halo-base", max_retries=0)
    manager = RunManager(settings, client, policy, ScreenshotStore(tmp_path / "shots"), EnvStandIn())

    async def fails() -> None:
        await asyncio.to_thread(redis_server.stop)  # its end cannot be recorded
        raise ModelMismatch("no Redis for the end")

    manager.check_served_model = fails
    created = await manager.create(RunSpec(domain="playground", tasks=["local.playground-1"], episodes=4))
    task = manager.active[created.run_id][0]
    await asyncio.sleep(1.5)
    await manager.shutdown()
    assert task.done() and manager.busy() is None
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("run-")]
    await policy.aclose()
    await client.aclose()


async def test_a_shutdown_ends_the_end_records_retries_even_when_a_redis_call_loses_the_cancel(redis_server, tmp_path):
    """A cancel that lands inside a Redis call can be lost (the call answers with its own error):
    the end's retries then stop on the shutdown flag rather than run forever (at load ~15 the fast
    tier hung here, in the shutdown of the test above, with Redis down)."""
    settings = TrainerSettings(_env_file=None, data_dir=tmp_path / "data", redis_url=redis_server.url)
    client = aioredis.from_url(redis_server.url)
    policy = PolicyClient("http://127.0.0.1:9", "halo-base", max_retries=0)
    manager = RunManager(settings, client, policy, ScreenshotStore(tmp_path / "shots"), EnvStandIn())
    saving = asyncio.Event()

    async def save_losing_the_cancel(status, done: bool = False) -> None:
        if not done:
            return
        saving.set()
        # What a Redis call that swallows the cancel does: it answers with its own error.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.2)
        raise redis.ConnectionError("Redis is down")

    async def fails() -> None:
        raise ModelMismatch("no Redis for the end")

    manager.registry.save = save_losing_the_cancel
    manager.check_served_model = fails
    created = await manager.create(RunSpec(domain="playground", tasks=["local.playground-1"], episodes=4))
    task = manager.active[created.run_id][0]
    await asyncio.wait_for(saving.wait(), 30)
    await asyncio.wait_for(manager.shutdown(), 30)
    assert task.done() and manager.busy() is None
    await policy.aclose()
    await client.aclose()
