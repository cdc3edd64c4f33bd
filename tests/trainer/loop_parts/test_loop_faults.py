"""The run loop under infrastructure faults: replaced jobs, exact accounting, a bounded wait.

Real Redis (a server of the tests' own), the real loop, learner (toy Qwen3-VL), checkpoints and
rollout workers. Where a fault needs to be scripted job by job, a worker stand-in publishes the
results a worker publishes; vLLM is a stand-in of its admin routes (conftest). The same faults
against the real services: tests/e2e/test_faults.py.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import redis.asyncio as aioredis

from halo.clients import EnvClient, RewardClient
from halo.schemas import EvalJob, PolicyVersion, RolloutJob, RolloutResult
from halo_trainer import keys
from halo_trainer.loop_parts.pipeline import InfrastructureOutage
from halo_trainer.rollout.play import Services
from halo_trainer.streams import current_policy_reader
from halo_trainer.worker import work
from tests.conftest import free_port
from tests.trainer.loop_harness import (
    RUN,
    TIMEOUT_S,
    episode,
    infra,
    make_loop,
    published_job_ids,
    results_pending,
    run_with_worker,
    scripted_worker,
    used_job_ids,
)


async def test_failed_jobs_are_replaced_counted_once_and_the_adapter_returns_after_a_restart(
    clean_redis, vllm_admin, base_model, tmp_path
):
    redis = aioredis.from_url(clean_redis)
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, episodes=6, eval_every=3, eval_episodes=3)
    failed: list[str] = []
    restarted: list[PolicyVersion] = []

    async def play(job: RolloutJob) -> RolloutResult:
        if isinstance(job, EvalJob):
            if not job.job_id.rsplit("-", 1)[-1].startswith("r"):  # every first attempt breaks
                return infra(job, "env: 503 no browser context is free")
            return episode(job, success=True)
        current = PolicyVersion.model_validate_json(await redis.get(keys.policy(RUN)))
        if job.job_id.endswith(("-j0", "-j1")):  # the first two: every job in flight fails
            failed.append(job.job_id)
            return infra(job, "env: 503 no browser context is free")
        if current.version >= 1 and not restarted:
            # vLLM restarts: it serves the base model only, and the next sample gets a 404.
            vllm_admin.restart()
            restarted.append(current)
            failed.append(job.job_id)
            return infra(job, f"policy server answered 404: The model `{current.adapter_name}` does not exist.")
        return episode(job)

    stop, worker_stop, seen = asyncio.Event(), asyncio.Event(), []
    worker = asyncio.create_task(scripted_worker(redis, loop.parts.settings, play, worker_stop, seen))
    try:
        outcome = await asyncio.wait_for(loop.run(stop), TIMEOUT_S)
    finally:
        worker_stop.set()
        await worker
    assert outcome == "finished"
    c = loop.c
    assert (c.episodes_done, c.updates, c.version) == (6, 3, 3)
    # Exact accounting: every train job published once, and each either used or replaced, never both.
    train_ids = [j for j in await published_job_ids(redis) if "-eval" not in j]
    assert len(train_ids) == len(set(train_ids)) == c.jobs_published == 9
    used = await used_job_ids(redis)
    assert len(used) == 6 and set(failed) == set(train_ids) - used and c.infra_failed_jobs == len(failed) == 3
    assert c.inflight == {} and c.jobs_timed_out == 0
    assert await results_pending(redis) == 0
    # The adapter vLLM lost in its restart was loaded again before training went on.
    [lost] = restarted
    assert vllm_admin.loads.count(lost.adapter_name) == 2
    assert f"{RUN}-v3" in vllm_admin.adapters
    # Evaluations: every asked episode ran, the infra failures replaced and never scored.
    evals = [json.loads(x) for x in (tmp_path / "run" / "eval.jsonl").read_text().splitlines()]
    assert [e["update"] for e in evals] == [0, 3]
    for e in evals:
        assert (e["eval/episodes"], e["eval/episodes_asked"], e["eval/infra_replaced"]) == (3, 3, 3)
        assert e["eval/success_rate"] == 1.0
    metrics = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert metrics[-1]["rollout/infra_failed_jobs"] == 3
    await redis.aclose()


async def test_a_permanent_outage_fails_the_run_after_the_configured_wait(
    clean_redis, vllm_admin, base_model, tmp_path
):
    """Real workers, an env service that is down: every job fails, replacements go out, then the run fails."""
    redis = aioredis.from_url(clean_redis)
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, outage_wait_s=4, episodes=100)
    dead = f"http://127.0.0.1:{free_port()}"
    services = Services(
        env=EnvClient(dead, timeout_s=5),
        policy=loop.parts.policy,
        reward=RewardClient(dead, timeout_s=5),
        current_policy=current_policy_reader(redis),
    )
    worker_stop = asyncio.Event()
    workers = [asyncio.create_task(work(f"w{i}", redis, services, loop.parts.settings, worker_stop)) for i in range(2)]
    try:
        with pytest.raises(InfrastructureOutage, match=r"no rollout succeeded for \d+ s .*last failure: env") as info:
            await asyncio.wait_for(loop.run(asyncio.Event()), TIMEOUT_S)
    finally:
        worker_stop.set()
        await asyncio.gather(*workers)
        await services.env.aclose()
        await services.reward.aclose()
    assert "HALO_TRAINER_OUTAGE_WAIT_S" in str(info.value)
    c = loop.c
    assert c.jobs_published > loop.cfg.jobs_per_update  # failed jobs were replaced, not waited on
    assert c.infra_failed_jobs + len(c.inflight) == c.jobs_published and c.episodes_done == 0
    await redis.aclose()


async def test_while_vllm_is_down_no_replacement_is_published_and_the_run_fails_after_the_wait(
    clean_redis, base_model, tmp_path
):
    redis = aioredis.from_url(clean_redis)
    dead_policy = f"http://127.0.0.1:{free_port()}"
    loop = make_loop(redis, tmp_path / "run", dead_policy, base_model, outage_wait_s=4, episodes=100)

    async def play(job: RolloutJob) -> RolloutResult:
        return infra(job, f"policy server at {dead_policy} is not reachable")

    worker_stop, seen = asyncio.Event(), []
    worker = asyncio.create_task(scripted_worker(redis, loop.parts.settings, play, worker_stop, seen))
    try:
        with pytest.raises(InfrastructureOutage, match="last failure: policy server: .* not reachable"):
            await asyncio.wait_for(loop.run(asyncio.Event()), TIMEOUT_S)
    finally:
        worker_stop.set()
        await worker
    # The jobs of the first round (this update's and, prefetched, the next's) failed; nothing more was
    # sent to a vLLM that was not there.
    first_round = loop.cfg.jobs_per_update * (1 + loop.cfg.prefetch_updates)
    assert loop.c.jobs_published == len(seen) == first_round == loop.c.infra_failed_jobs
    await redis.aclose()


async def test_a_run_stopped_when_only_failed_jobs_came_back_acknowledges_them(
    clean_redis, vllm_admin, base_model, tmp_path
):
    """The final checkpoint acknowledges results no update used (a stop while jobs only failed)."""
    redis = aioredis.from_url(clean_redis)
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, episodes=100)
    stop = asyncio.Event()

    played: list[str] = []

    async def play(job: RolloutJob) -> RolloutResult:
        played.append(job.job_id)
        if len(played) >= 2:
            stop.set()
        return infra(job, "env: 503 no browser context is free")

    outcome, _ = await run_with_worker(loop, play, stop)
    assert outcome == "stopped"
    assert loop.c.updates == 0 and loop.c.infra_failed_jobs >= 1
    assert loop.c.pending_entries == [] and await used_job_ids(redis) == set()
    assert await results_pending(redis) == 0
    await redis.aclose()


async def test_an_evaluation_cut_short_by_a_stop_before_any_episode_records_nothing(
    clean_redis, vllm_admin, tmp_path, base_model
):
    """Nothing measured is not a point: no NaN row in eval.jsonl for the plots and the viewer to draw."""
    redis = aioredis.from_url(clean_redis)
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, episodes=100, eval_every=3, eval_episodes=2)
    stop = asyncio.Event()

    async def play(job: RolloutJob) -> RolloutResult:
        stop.set()  # the first evaluation's first job: the run is stopped while it plays
        return infra(job, "env: 503 no browser context is free")

    outcome, seen = await run_with_worker(loop, play, stop)
    assert outcome == "stopped"
    assert seen and isinstance(seen[0], EvalJob)
    eval_log = tmp_path / "run" / "eval.jsonl"
    assert not eval_log.exists() or eval_log.read_text() == ""
    await redis.aclose()
