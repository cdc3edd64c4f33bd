"""Adapter folders through the data plane: a policy replica on a machine without the head's data
folder (the ``http`` store) gets each adapter version the trainer publishes.

Real processes on one machine, two folders: the head's data folder served by the real data server,
the node's own folder, a stand-in replica that can open files only under the node's folder (a load
of any other path fails as vLLM's does), and the real sidecar (``python -m halo_cluster replica``)
with the node's store settings. The trainer's own client publishes the head's path."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from halo.settings import REPO_ROOT
from halo.settings.trainer import TrainerSettings
from halo_trainer.rollout.services import policy_client
from tests import lifetime
from tests.cluster.data_server import serve_data
from tests.cluster.replicas import StubReplica
from tests.conftest import free_port, stop_services

pytestmark = pytest.mark.slow  # a data server, a replica and its sidecar as processes
TOKEN = "c" * 64


def adapter(root: Path, rel: str, seed: int) -> Path:
    folder = root / rel
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(f'{{"r": 8, "seed": {seed}}}')
    (folder / "adapter_model.safetensors").write_bytes(os.urandom(200_000))
    return folder


def files(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


async def until(check, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.2)


async def test_a_replica_without_the_heads_folder_loads_published_adapters_from_the_store(
    tmp_path: Path, redis_url: str, key_prefix: str
) -> None:
    head, node = tmp_path / "head", tmp_path / "node"
    node.mkdir()
    v1 = adapter(head, "runs/r1/adapters/v1", 1)
    server, store_url = serve_data(head, TOKEN)
    stub = StubReplica("node-gpu0", free_port(), ("--load-ms", "10", "--only-under", str(node))).start()
    prefix = f"{key_prefix}:"
    sidecar_env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "HALO_REDIS_URL": redis_url,
        "HALO_CLUSTER_KEY_PREFIX": prefix,
        "HALO_CLUSTER_REPLICA_HEARTBEAT_S": "0.3",
        "HALO_DATA_DIR": str(node),
        "HALO_STORE_BACKEND": "http",
        "HALO_STORE_HEAD_URL": store_url,
        "HALO_STORE_TOKEN": TOKEN,
    }
    argv = [sys.executable, "-m", "halo_cluster", "replica", "--id", "node-gpu0", "--url", stub.url]
    sidecar = lifetime.popen([*argv, "--max-loras", "4"], env=sidecar_env, start_new_session=True)
    client = policy_client(TrainerSettings(_env_file=None, redis_url=redis_url, data_dir=head, policy_replicas=prefix))
    redis = aioredis.from_url(redis_url)
    try:
        await asyncio.to_thread(stub.wait_ready)

        async def registered() -> bool:
            assert sidecar.poll() is None, "the sidecar exited"
            return bool(await client.registry.live())

        await until(registered)
        (record,) = await client.registry.live()
        assert record.fetches_adapters, "a sidecar on the http store must say that it fetches adapters"

        # The trainer publishes the head's path; the replica loads the node's copy of the same folder.
        result = await client.fanout.publish("r1-v1", str(v1))
        assert result.current and result.missing == {}, result
        local = node / "runs/r1/adapters/v1"
        assert files(local) == files(v1)
        roots = {m["id"]: m.get("root") for m in httpx.get(f"{stub.url}/v1/models").json()["data"]}
        assert roots["r1-v1"] == str(local)
        sample = await client.pool.chat(f"job-{uuid.uuid4().hex[:6]}", {"model": "r1-v1", "messages": []})
        assert (sample.replica_id, sample.adapter) == ("node-gpu0", "r1-v1")

        # A restarted (empty) replica is taken back only with the live version loaded, from the node's copy.
        stub.kill()
        await until(lambda: _empty(client))
        stub.start()
        await asyncio.to_thread(stub.wait_ready)

        async def back_with_v1() -> bool:
            live = await client.registry.live()
            return bool(live) and "r1-v1" in live[0].adapters

        await until(back_with_v1)
        assert "r1-v1" in await client.fanout.served(record)

        # What cannot go through the store is refused with the reason, and the version is not current.
        outside = adapter(tmp_path / "elsewhere", "v2", 2)
        refused = await client.fanout.publish("r1-v2", str(outside))
        assert not refused.current and "outside the head's data folder" in refused.missing["node-gpu0"]
        gone = await client.fanout.publish("r1-v3", str(head / "runs/r1/adapters/v3"))
        assert not gone.current and "not on the head" in gone.missing["node-gpu0"]
        assert await client.fanout.current() == "r1-v1"
    finally:
        if sidecar.poll() is None:
            os.killpg(sidecar.pid, signal.SIGTERM)  # the sidecar this test started
        sidecar.wait(timeout=30)
        stub.kill()
        stop_services([server])
        await client.aclose()
        await redis.aclose()
    assert sidecar.returncode == 0


async def _empty(client) -> bool:
    return await client.registry.live() == []


@pytest.mark.vllm
async def test_the_real_vllm_loads_the_copy_its_sidecar_fetched(
    vllm_server,
    tiny_model_dir: Path,
    tmp_path: Path,
    redis_url: str,
    key_prefix: str,
) -> None:
    from halo.adapter_fanout import AdapterFanout
    from halo.schemas.cluster import ReplicaRecord
    from halo.store import HttpStore
    from halo_cluster.replica_sidecar import run_sidecar
    from halo_model.lora import random_adapter
    from tests.conftest import noise_png

    head, node = tmp_path / "head", tmp_path / "node"
    v1 = random_adapter(tiny_model_dir, head / "runs/rv/adapters/v1", seed=1)
    server, store_url = serve_data(head, TOKEN)
    prefix = f"{key_prefix}:"
    client = policy_client(
        TrainerSettings(
            _env_file=None,
            redis_url=redis_url,
            data_dir=head,
            policy_replicas=prefix,
            policy_model_name=vllm_server.served_model_name,
        )
    )
    store = HttpStore(store_url, TOKEN, node)
    sidecar_fanout = AdapterFanout(client.pool, fetch=lambda key: asyncio.to_thread(store.local_dir, key))
    url = f"http://127.0.0.1:{vllm_server.port}"
    record = ReplicaRecord(replica_id="cpu0", url=url, max_loras=vllm_server.max_loras, fetches_adapters=True)
    stopping: list[bool] = []
    sidecar = asyncio.create_task(run_sidecar(sidecar_fanout, record, 1.0, lambda: bool(stopping)))
    try:
        while await client.replica_count() == 0:
            assert not sidecar.done(), sidecar
            await asyncio.sleep(0.2)
        result = await client.fanout.publish("rv-v1", str(v1))
        assert result.current, result
        roots = {m["id"]: m.get("root") for m in httpx.get(f"{url}/v1/models").json()["data"]}
        assert roots["rv-v1"] == str(node / "runs/rv/adapters/v1")
        assert files(node / "runs/rv/adapters/v1") == files(v1)
        tuned = await client.sample_actions(
            noise_png(64, 48, seed=0),
            "click",
            n=1,
            temperature=1.0,
            seed=0,
            model="rv-v1",
            max_tokens=8,
            job_id="rv-j1",
            run_id="rv",
        )
        assert (tuned.model, tuned.replica) == ("rv-v1", "cpu0")
    finally:
        await client.unload_run_adapters("rv")
        stopping.append(True)
        await sidecar
        store.close()
        stop_services([server])
        await client.aclose()
