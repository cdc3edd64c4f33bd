"""The run loop with the learner across ranks (``halo_trainer.learner.ranks``): two gloo ranks on the
CPU, real processes started as torchrun starts them (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``), the
service's own path (``ranks.join``, ``ranks.lead``, ``ranks.serve``).

Rank 0 runs the real GRPO loop (tests/trainer/loop_harness.py: real Redis, the scripted worker,
vLLM's admin routes stood in); rank 1 has no Redis, no policy client and no loop, only rank 0's word.
The harness's results carry episodes and no transitions (nothing to tokenise), so each update's
batch is the learner tests' fixed one, handed to the loop's learner where the algorithm hands its
batch; everything around it (collecting, publishing adapters, checkpoints, acknowledgement) is the
loop's own. The same run in one process is the reference.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from safetensors.torch import load_file

from halo.schemas import RolloutJob
from halo_model.loading import load_model, load_processor
from halo_trainer.learner import ranks
from halo_trainer.learner.learner import Learner
from halo_trainer.learner.ranks import Leader
from tests.conftest import free_port
from tests.trainer.conftest import AdminStandIn, serving
from tests.trainer.learner.test_fsdp_ranks import batches, one_thread, pairs, settings
from tests.trainer.loop_harness import (
    episode,
    make_loop,
    published_job_ids,
    results_pending,
    run_with_worker,
    used_job_ids,
)

WORLD = 2
SEED = 7  # the run's seed: every rank's LoRA starts from it
EPISODES = 4  # two updates of two jobs


async def _play(job: RolloutJob):
    result = episode(job)
    return [result, result]  # a worker that died between publishing and acknowledging: a duplicate


async def _run(loop, processor) -> tuple[str, list]:
    """The harness's loop, each update's batch the fixed one of its index."""
    fixed = batches(processor)

    async def learn_from(messages):
        return await asyncio.to_thread(loop.learner.update, fixed[loop.c.updates % len(fixed)])

    loop._learn_from = learn_from
    return await run_with_worker(loop, _play)


async def _facts(redis_url: str) -> dict:
    client = aioredis.from_url(redis_url)
    try:
        return {
            "published": await published_job_ids(client),
            "used": sorted(await used_job_ids(client)),
            "pending": await results_pending(client),
        }
    finally:
        await client.aclose()


def _dpo(leader: Leader, processor) -> dict[str, float]:
    """MCTS's learner calls after the run: the pairs' reference log-probs, then a DPO step."""
    chosen, rejected = pairs(processor)
    refs = leader.logprobs(chosen, adapter=False), leader.logprobs(rejected, adapter=False)
    return leader.dpo_update(chosen, rejected, *refs, beta=0.5, rpo_alpha=0.1)


async def _lead(model_dir: str, redis_url: str, run_dir: Path) -> dict:
    leader = ranks.lead(model_dir, settings(), device="cpu", dtype="float32", seed=SEED)
    processor = load_processor(model_dir)
    try:
        async with serving(AdminStandIn()) as stand_in:
            client = aioredis.from_url(redis_url)
            loop = make_loop(client, run_dir, stand_in.url, None, episodes=EPISODES, learner=leader)
            outcome, seen = await _run(loop, processor)
            await client.aclose()
        dpo = _dpo(leader, processor)
    finally:
        ranks.end_run()
    found = {"outcome": outcome, "seen": [j.job_id for j in seen], "updates": loop.c.updates, "dpo": dpo}
    return found | await _facts(redis_url)


def _rank(rank: int, port: int, model_dir: str, redis_url: str, out: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(WORLD), RANK=str(rank), LOCAL_RANK=str(rank)
    )
    torch.set_num_threads(1)
    # Started here only to bound a hang (a call one rank makes and the other not) at 5 minutes;
    # ``join`` takes the group as it finds it.
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=300))
    channel = ranks.join()
    assert channel is not None and channel.ranks.rank == rank
    try:
        if rank == 0:
            found = asyncio.run(_lead(model_dir, redis_url, Path(out) / "run"))
            ranks.close()
        else:
            found = {"calls": ranks.serve(channel)}
        (Path(out) / f"rank{rank}.json").write_text(json.dumps(found))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_ranks(own_redis_url, tiny_model_dir, tmp_path_factory) -> dict:
    redis.Redis.from_url(own_redis_url).flushdb()
    out = tmp_path_factory.mktemp("loop-ranks")
    mp.spawn(_rank, args=(free_port(), str(tiny_model_dir), own_redis_url, str(out)), nprocs=WORLD, join=True)
    found = {f"rank{r}": json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)}
    return found | {"run": out / "run"}


@pytest.fixture(scope="module")
def one_process(own_redis_url, tiny_model_dir, tmp_path_factory) -> tuple[Path, dict[str, float]]:
    """The same run in one process, after the ranks' (the job stream is one key for every run)."""
    redis.Redis.from_url(own_redis_url).flushdb()
    run_dir = tmp_path_factory.mktemp("loop-one") / "run"
    model = load_model(tiny_model_dir)
    torch.manual_seed(SEED)
    learner = Learner(model, settings())

    async def main() -> str:
        async with serving(AdminStandIn()) as stand_in:
            client = aioredis.from_url(own_redis_url)
            loop = make_loop(client, run_dir, stand_in.url, None, episodes=EPISODES, learner=learner)
            outcome, _ = await _run(loop, load_processor(tiny_model_dir))
            await client.aclose()
            return outcome

    with one_thread():  # the ranks' thread count, so that only the sharding can differ
        assert asyncio.run(main()) == "finished"
        return run_dir, _dpo(Leader(learner), load_processor(tiny_model_dir))


def _adapter(run_dir: Path, version: int) -> dict[str, torch.Tensor]:
    return load_file(str(run_dir / "adapters" / f"v{version}" / "adapter_model.safetensors"))


@pytest.mark.slow
def test_rank_0_alone_claims_and_acknowledges_every_job_once(two_ranks) -> None:
    lead = two_ranks["rank0"]
    assert (lead["outcome"], lead["updates"]) == ("finished", 2)
    # Every job published once, each used in a checkpointed update once, every copy acknowledged.
    assert sorted(lead["published"]) == sorted(set(lead["published"])) == sorted(lead["seen"])
    assert len(lead["seen"]) == 4 and lead["used"] == sorted(lead["seen"])
    assert lead["pending"] == 0
    # Rank 1 made the learner calls of rank 0, in its order, and nothing else: the resume of a fresh
    # run, then per update the step, the adapter published and the checkpoint; then MCTS's calls.
    loop_calls = ["resume"] + ["update", "save_adapter", "checkpoint"] * 2
    assert two_ranks["rank1"]["calls"] == loop_calls + ["logprobs", "logprobs", "dpo_update"]


@pytest.mark.slow
def test_two_ranks_in_the_loop_give_one_process_run(two_ranks, one_process) -> None:
    one_process, dpo = one_process
    for version in (1, 2):
        ranked, alone = _adapter(two_ranks["run"], version), _adapter(one_process, version)
        assert set(ranked) == set(alone)
        for name, value in alone.items():
            torch.testing.assert_close(ranked[name], value, atol=1e-6, rtol=0, msg=f"v{version} {name}")
    # The updates moved the adapter (so the comparison means something): B from zero, then A too.
    first, second = _adapter(one_process, 1), _adapter(one_process, 2)
    assert all(bool(value.abs().max() > 0) for name, value in first.items() if "lora_B" in name)
    assert all(not torch.equal(first[name], second[name]) for name in first)
    # The checkpoints are the same (rank 0 wrote the ranks' one in the one-process format).
    for root in (two_ranks["run"], one_process):
        assert (root / "checkpoints" / "latest").read_text().strip() == "ckpt-2"
    # The DPO step through the Leader: the same loss and gradient (its parameters are compared in
    # float64 in tests/trainer/learner/test_fsdp_ranks.py; in float32 one entry differs by 8e-6).
    ranked = two_ranks["rank0"]["dpo"]
    assert ranked["dpo/loss"] == pytest.approx(dpo["dpo/loss"], rel=1e-5)
    assert ranked["dpo/grad_norm"] == pytest.approx(dpo["dpo/grad_norm"], rel=1e-5)
