"""A full-weights run refuses a policy server that cannot reload weights, before it samples anything.

The stand-in has vLLM's adapter routes but no dev-mode ``/collective_rpc`` (vLLM started without
``HALO_POLICY_WEIGHT_RELOAD``). The sync itself against a real vLLM: tests/policy/test_weight_sync.py.
"""

from __future__ import annotations

import asyncio
import copy

import pytest
import redis.asyncio as aioredis

from halo_trainer.learner.learner import Learner
from halo_trainer.loop_parts.publisher import WeightReloadUnavailable
from tests.learner_config import plain_config
from tests.trainer.loop_harness import episode, make_loop, run_with_worker


async def test_a_full_weights_run_refuses_a_vllm_without_weight_reload(clean_redis, vllm_admin, base_model, tmp_path):
    r = aioredis.Redis.from_url(clean_redis)
    cfg = plain_config(learning_rate=1e-3, lora_r=4, lora_alpha=8.0, max_tokens=8, full_weights=("vision_merger",))
    learner = Learner(copy.deepcopy(base_model), cfg)
    loop = make_loop(r, tmp_path / "run", vllm_admin.url, base_model, episodes=4, learner=learner)
    played = []

    async def play(job):
        played.append(job)
        return episode(job)

    with pytest.raises(WeightReloadUnavailable, match="HALO_POLICY_WEIGHT_RELOAD"):
        await run_with_worker(loop, play)
    await asyncio.sleep(0)
    assert played == []  # refused before any job went out
    assert vllm_admin.loads == []
    await r.aclose()


async def test_each_updates_metrics_record_its_publish_time(clean_redis, vllm_admin, base_model, tmp_path):
    """The publish's timings reach metrics.jsonl (they were set on ``latest`` and then replaced)."""
    import json

    r = aioredis.Redis.from_url(clean_redis)
    loop = make_loop(r, tmp_path / "run", vllm_admin.url, base_model, episodes=4)

    async def play(job):
        return episode(job)

    outcome, _ = await run_with_worker(loop, play)
    assert outcome == "finished"
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert lines and all(line["policy/adapter_load_s"] >= 0 for line in lines)
    await r.aclose()


async def test_a_full_weights_run_gives_vllm_its_base_weights_back_at_the_end(
    clean_redis, vllm_admin_reload, base_model, tmp_path
):
    """Each version's weights are reloaded with its adapter; when the run ends, the weights as the
    learner loaded them are reloaded and the run's adapter unloaded, so the server is the base
    model again for the next run (the folder's content: test_full_weights)."""
    r = aioredis.Redis.from_url(clean_redis)
    run_dir = tmp_path / "run"
    cfg = plain_config(learning_rate=1e-3, lora_r=4, lora_alpha=8.0, max_tokens=8, full_weights=("vision_merger",))
    learner = Learner(copy.deepcopy(base_model), cfg)
    loop = make_loop(r, run_dir, vllm_admin_reload.url, base_model, episodes=4, learner=learner)

    async def play(job):
        return episode(job)

    outcome, _ = await run_with_worker(loop, play)
    assert outcome == "finished" and loop.c.version == 2
    assert vllm_admin_reload.reloads == [str(run_dir / "weights" / f"v{k}") for k in (1, 2)]
    assert sorted(p.name for p in (run_dir / "weights").iterdir()) == ["v2"]  # only the current one kept
    await loop.release_weights()
    assert vllm_admin_reload.reloads[-1] == str(run_dir / "weights" / "v0")
    assert vllm_admin_reload.adapters == set()  # no adapter names the trained weights any more
    assert not (run_dir / "weights" / "v0").exists()
    await r.aclose()
