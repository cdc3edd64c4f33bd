"""The real vLLM CPU server (the tiny Qwen3-VL) as the one registered policy replica of the trainer's
client (``HALO_TRAINER_POLICY_REPLICAS``): the stand-in's routes and answers are vLLM's, here
checked against vLLM itself. A sample says which replica and which adapter answered, a version
published through the fan-out is served and sampled, and the run's end unloads it."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path

import pytest

from halo.policy_replicated import ReplicatedPolicyClient
from halo.schemas.cluster import ReplicaRecord
from halo.settings.policy import PolicySettings
from halo.settings.trainer import TrainerSettings
from halo.transport import CallError
from halo_cluster.replica_sidecar import run_sidecar
from halo_trainer.rollout.services import policy_client
from tests.conftest import noise_png

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


async def test_the_real_vllm_as_the_one_registered_replica(
    vllm_server: PolicySettings,
    tiny_model_dir: Path,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    from halo_model.lora import random_adapter

    run = f"rep{uuid.uuid4().hex[:6]}"
    settings = TrainerSettings(
        _env_file=None,
        redis_url=redis_url,
        policy_replicas=f"{key_prefix}:",
        policy_model_name=vllm_server.served_model_name,
    )
    client = policy_client(settings)
    assert isinstance(client, ReplicatedPolicyClient)
    url = f"http://127.0.0.1:{vllm_server.port}"
    record = ReplicaRecord(replica_id="cpu0", url=url, max_loras=vllm_server.max_loras)
    # The real sidecar keeps it registered: a CPU sample outlasts the registry's heartbeat TTL.
    stopping: list[bool] = []
    sidecar = asyncio.create_task(run_sidecar(client.fanout, record, 1.0, lambda: bool(stopping)))
    try:
        while await client.replica_count() == 0:
            assert not sidecar.done(), sidecar
            await asyncio.sleep(0.2)
        await client.health()
        png = noise_png(128, 96, seed=0)

        async def sample(model: str, job: str):
            return await client.sample_actions(
                png, "click", n=2, temperature=1.0, seed=0, model=model, max_tokens=8, job_id=job, run_id=run
            )

        base = await sample(vllm_server.served_model_name, f"{run}-j0")
        assert base.replica == "cpu0" and base.model == vllm_server.served_model_name
        assert len(base.candidates) == 2 and base.prompt_token_ids
        assert all(len(c.token_ids) == len(c.logprobs) > 0 for c in base.candidates)
        name = f"{run}-v1"
        await client.publish_adapter(name, str(random_adapter(tiny_model_dir, tmp_path / "v1", seed=1)))
        assert name in {m["id"] for m in await client.models()} and name in await client.fanout.versions()
        tuned = await sample(name, f"{run}-j1")
        assert tuned.model == name and tuned.replica == "cpu0"
        assert await client.unload_run_adapters(run) == [name]
        assert name not in await client.served_names()
        assert await client.infra_counters(run) == {}  # nothing failed over, nothing answered wrongly
    finally:
        with contextlib.suppress(CallError):
            await client.unload_run_adapters(run)
        stopping.append(True)
        await sidecar
        await client.aclose()
