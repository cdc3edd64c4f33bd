"""The run loop as the fast tests drive it: real Redis, the real loop, learner and checkpoints.

Results are published by ``scripted_worker``, which takes the loop's jobs from the real job
stream and publishes what ``play(job)`` returns, as a worker does; the results carry episodes and
no transitions, so no update needs a processor. vLLM's admin routes are a stand-in (conftest).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from pathlib import Path

import redis.asyncio as aioredis

from halo.policy_client import PolicyClient
from halo.schemas import JOB_ADAPTER, EpisodeSummary, RolloutJob, RolloutResult, RunSpec
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.config import load_defaults, resolve
from halo_trainer.grpo.loop import GrpoLoop
from halo_trainer.learner.learner import Learner
from halo_trainer.mcts.loop import MctsLoop
from halo_trainer.streams import jobs_queue, results_queue
from tests.learner_config import plain_config

RUN = "loop-run"
TIMEOUT_S = 120  # a guard against a hang, not a speed target


class Killed(Exception):
    """Stands for a `kill -9`: the loop stops wherever it is, nothing runs after it."""


def new_learner(base_model) -> Learner:
    cfg = plain_config(learning_rate=1e-3, lora_r=4, lora_alpha=8.0, max_tokens=8)
    return Learner(copy.deepcopy(base_model), cfg)


def make_loop(
    redis: aioredis.Redis,
    run_dir: Path,
    policy_url: str,
    base_model,
    *,
    outage_wait_s: float = 60,
    learner: Learner | None = None,
    policy: PolicyClient | None = None,
    **run,
) -> GrpoLoop:
    """A run of ``episodes`` on one task: 2 generations, 1 step, 2 jobs an update, sync and checkpoint each.
    ``policy``: the client in place of one of the server at ``policy_url`` (several replicas, say)."""
    settings = TrainerSettings(outage_wait_s=outage_wait_s, job_claim_idle_s=30)
    spec = RunSpec(
        domain="playground",
        episodes=run.pop("episodes"),
        num_generations=2,
        max_steps=1,
        eval_every=run.pop("eval_every", 0),
        eval_episodes=run.pop("eval_episodes", 0),
        group_mode=run.pop("group_mode", None),
    )
    defaults = load_defaults(settings.rl_config)
    cfg = resolve(spec, RUN, ["local.playground-1"], defaults, "tiny")
    cfg = cfg.model_copy(update={"jobs_per_update": 2, "sync_every": 1, "checkpoint_every": 1, **run})
    return GrpoLoop(
        cfg,
        redis=redis,
        policy=policy or PolicyClient(policy_url, "halo-base", max_retries=0),
        learner=learner or new_learner(base_model),
        processor=None,  # results carry episodes but no transitions: nothing to tokenise
        store=ScreenshotStore(run_dir.parent / "shots"),
        run_dir=run_dir,
        settings=settings,
    )


def episode(job: RolloutJob, success: bool | None = None, episodes: int = 1) -> RolloutResult:
    summaries = [
        EpisodeSummary(
            run_id=job.run_id,
            job_id=job.job_id,
            episode_id=f"{job.job_id}-e{i}",
            group_id=job.group_id,
            task_id=job.task_id,
            policy_version=job.policy.version,
            purpose=job.purpose,
            steps=1,
            episode_return=0.0,
            success=success,
            valid_actions=1,
        )
        for i in range(episodes)
    ]
    return RolloutResult(
        job_id=job.job_id, run_id=job.run_id, purpose=job.purpose, policy_version=job.policy.version, episodes=summaries
    )


def infra(job: RolloutJob, why: str) -> RolloutResult:
    return RolloutResult(
        job_id=job.job_id, run_id=job.run_id, purpose=job.purpose, policy_version=job.policy.version, infra_error=why
    )


Play = Callable[[RolloutJob], Awaitable[RolloutResult | list[RolloutResult]]]


async def scripted_worker(
    redis: aioredis.Redis, settings: TrainerSettings, play: Play, stop: asyncio.Event, seen: list[RolloutJob]
) -> None:
    """Takes jobs from the real job stream and publishes ``play(job)`` (one result, or several: duplicates)."""
    jobs = jobs_queue(redis, settings)

    async def handle(delivery) -> None:
        job = delivery.message
        seen.append(job)
        played = await play(job)
        for result in played if isinstance(played, list) else [played]:
            await results_queue(redis, job.run_id).publish(result, dedup_id=job.job_id)

    while not stop.is_set():
        await jobs.process("scripted", handle, block_ms=200)


async def run_with_worker(loop: GrpoLoop | MctsLoop, play: Play, stop: asyncio.Event | None = None) -> tuple[str, list]:
    """``loop.run`` beside a scripted worker; returns the outcome and the jobs the worker took."""
    worker_stop, seen = asyncio.Event(), []
    worker = asyncio.create_task(scripted_worker(loop.parts.redis, loop.parts.settings, play, worker_stop, seen))
    try:
        outcome = await asyncio.wait_for(loop.run(stop or asyncio.Event()), TIMEOUT_S)
    finally:
        worker_stop.set()
        await worker
    return outcome, seen


async def published_job_ids(redis: aioredis.Redis) -> list[str]:
    entries = await redis.xrange(keys.JOBS)
    return [JOB_ADAPTER.validate_json(f[b"data"]).job_id for _, f in entries]


async def used_job_ids(redis: aioredis.Redis, run_id: str = RUN) -> set[str]:
    """The job ids the results queue marked done: those whose result is in a checkpointed update."""
    prefix = f"{keys.results(run_id)}:done:"
    return {k.decode().removeprefix(prefix) async for k in redis.scan_iter(f"{prefix}*")}


async def results_pending(redis: aioredis.Redis, run_id: str = RUN) -> int:
    return (await redis.xpending(keys.results(run_id), "learner"))["pending"]
