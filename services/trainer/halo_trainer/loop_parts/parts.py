"""The parts one run's loop is built from, and the steps every loop takes around its update.

    start:   restore the last checkpoint, serve its version, evaluate the starting policy
    batches: each update's results, until the episode budget is spent or the run is stopped
    (the algorithm: learn from them, publish a version)
    close:   evaluate when due, record the update's metrics, checkpoint when due, report progress
    finish:  evaluate the final policy, checkpoint, report

The parts share one ``Counters`` object, which is what a checkpoint saves beside the weights, and
hold the learner as a ``Leader`` (``halo_trainer.learner.ranks``): with the learner across ranks the
loop runs on rank 0 alone, and each learner call it makes (update, log-probs, adapter, checkpoint)
is told to the other ranks first; in one process the Leader only makes the call.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from halo.policy_client import PolicyClient
from halo.queue import Delivery
from halo.schemas import PolicyVersion, RolloutJob, RolloutResult, RunPhase
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import RunConfig
from halo_trainer.learner.checkpoint import CheckpointManager
from halo_trainer.learner.learner import Learner
from halo_trainer.learner.ranks import Leader
from halo_trainer.loop_parts.durability import Durability
from halo_trainer.loop_parts.evaluation import Evaluator
from halo_trainer.loop_parts.pipeline import JobPipeline, Outage
from halo_trainer.loop_parts.progress import Progress
from halo_trainer.loop_parts.publisher import PolicyPublisher
from halo_trainer.loop_parts.state import Counters
from halo_trainer.observe.episode_log import Advantages, EpisodeLog
from halo_trainer.observe.metrics import MetricsLog
from halo_trainer.observe.trackers import Trackers
from halo_trainer.streams import jobs_queue, results_queue


@dataclass(frozen=True)
class LoopStatus:
    """What the run manager reports of a run in progress (``RunParts.status``)."""

    updates: int
    version: int
    episodes_done: int
    adapter_name: str  # what new samples use: the base model name at version 0
    metrics: dict[str, float]  # the latest update's metrics, NaN left out
    phase: RunPhase | None = None  # what the loop is doing now (``loop_parts.progress``)


class RunParts:
    def __init__(
        self,
        cfg: RunConfig,
        *,
        train_job: Callable[[PolicyVersion, int], RolloutJob],
        episodes_per_job: int,
        advantages: Advantages,
        redis: aioredis.Redis,
        policy: PolicyClient,
        learner: Learner | Leader,
        processor: Any,
        store: ScreenshotStore,
        run_dir: Path,
        settings: TrainerSettings,
        status_cb: Callable[[LoopStatus], Awaitable[None]] | None = None,
        trackers: Trackers | None = None,
        phase_cb: Callable[[RunPhase], Awaitable[None]] | None = None,
    ) -> None:
        self.cfg, self.redis, self.policy, self.learner = cfg, redis, policy, Leader.of(learner)
        self.processor, self.store, self.run_dir, self.settings = processor, store, Path(run_dir), settings
        # status_cb hears of each update's end (its counters and metrics), phase_cb of every phase
        # change and the progress inside a phase (``loop_parts.progress``), which is far more often.
        self.status_cb, self.trackers, self.phase_cb = status_cb, trackers, phase_cb
        self.c = Counters()
        self.progress = Progress(self._report_phase)
        self.metrics = MetricsLog(self.run_dir / "metrics.jsonl", trackers=trackers)
        episodes = EpisodeLog(self.run_dir / "episodes.jsonl", cfg.record_episodes_every, advantages)
        self.publisher = PolicyPublisher(
            run_id=cfg.run_id,
            redis=redis,
            policy=policy,
            learner=self.learner,
            run_dir=self.run_dir,
            counters=self.c,
            max_staleness=cfg.max_staleness,
            outage_wait_s=settings.outage_wait_s,
            progress=self.progress,
        )
        self.pipeline = JobPipeline(
            jobs=jobs_queue(redis, settings),
            results=results_queue(redis, cfg.run_id),
            counters=self.c,
            episodes=episodes,
            outage=Outage(settings.outage_wait_s, ready=self._policy_ready, progress=self.progress),
            train_job=lambda index: train_job(self.publisher.current(), index),
            episodes_per_job=episodes_per_job,
            episode_budget=cfg.episodes,
            prefetch_updates=cfg.prefetch_updates,
            progress=self.progress,
        )
        self.durability = Durability(
            checkpoints=CheckpointManager(self.run_dir / "checkpoints", keep=settings.checkpoint_keep),
            learner=self.learner,
            config=cfg.model_dump(mode="json"),
            counters=self.c,
            pipeline=self.pipeline,
        )
        self.evaluator = Evaluator(
            cfg=cfg,
            pipeline=self.pipeline,
            counters=self.c,
            current=self.publisher.current,
            episodes=episodes,
            trackers=trackers,
            store=store,
            run_dir=self.run_dir,
        )
        self.latest: dict[str, float] = {}
        self.started = time.monotonic()
        self.stop = asyncio.Event()

    async def _policy_ready(self) -> None:
        """vLLM is up and serves the run's current version (loaded again after a restart)."""
        await self.policy.health()
        await self.publisher.ensure_served(self.c.version)

    async def start(self, stop: asyncio.Event) -> None:
        """Resume from the last checkpoint, serve its version, and take the baseline evaluation."""
        self.stop = stop
        await self.progress.enter("starting", "restoring the last checkpoint")
        await self.durability.restore(self.cfg.run_id)
        await self.progress.enter("publishing", f"serving v{self.c.version}")
        await self.publisher.serve(self.c.version)
        if self.c.updates == 0 and self.c.eval_rounds == 0 and self.cfg.eval_every:
            await self.evaluator.evaluate(stop)

    async def batches(self, stop: asyncio.Event) -> AsyncIterator[list[Delivery[RolloutResult]]]:
        """Each update's results (``jobs_per_update`` of them, fewer at the budget's end) until the
        episode budget is spent or ``stop`` is set."""
        while self.c.episodes_done < self.cfg.episodes and not stop.is_set():
            update = self.c.updates + 1
            await self.progress.enter("collecting", f"collecting update {update}", unit="jobs")
            if results := await self.pipeline.collect(self.cfg.jobs_per_update, stop):
                await self.progress.enter("updating", f"update {update}: learner step on {len(results)} jobs")
                yield results

    def count_update(self, results: list[Delivery[RolloutResult]], episodes: int, started: float) -> dict[str, float]:
        """``results`` (``episodes`` of the budget) made an update that began at ``started``
        (``time.perf_counter``): count it, mark them used, and the update's rollout metrics."""
        self.c.updates += 1
        self.c.episodes_done += episodes
        self.pipeline.used(results)
        elapsed = time.monotonic() - self.started
        return {
            "train/update_s": time.perf_counter() - started,
            "rollout/episodes_per_s": self.c.episodes_done / max(elapsed, 1e-9),
            "rollout/episodes_done": float(self.c.episodes_done),
            "rollout/infra_failed_jobs": float(self.c.infra_failed_jobs),
            "rollout/jobs_timed_out": float(self.c.jobs_timed_out),
        }

    async def close_update(self, metrics: dict[str, float]) -> None:
        """Evaluate when due, record the update's metrics, checkpoint when due, report progress."""
        if self.cfg.eval_every and self.c.updates % self.cfg.eval_every == 0:
            metrics |= await self.evaluator.evaluate(self.stop)
        metrics["policy/version"] = float(self.c.version)
        metrics |= self.publisher.sync_metrics  # set by the publish before this
        self.publisher.sync_metrics = {}
        self.latest = metrics
        self.metrics.write(self.c.updates, self.c.version, metrics)
        if self.c.updates % self.cfg.checkpoint_every == 0:
            await self.progress.enter("checkpointing", f"checkpointing update {self.c.updates}")
            await self.durability.checkpoint()
        await self._report()

    async def finish(self, stop: asyncio.Event) -> str:
        """Evaluate the final policy (unless the last update just did), checkpoint, report; the run's end state."""
        if self.cfg.eval_every and not stop.is_set() and self.c.updates % self.cfg.eval_every:
            self.latest |= await self.evaluator.evaluate(stop)
            self.metrics.write(self.c.updates, self.c.version, self.latest)
        await self.progress.enter("checkpointing", f"final checkpoint at update {self.c.updates}")
        await self.durability.checkpoint()
        await self._report()
        return "stopped" if stop.is_set() else "finished"

    def status(self) -> LoopStatus:
        return LoopStatus(
            updates=self.c.updates,
            version=self.c.version,
            episodes_done=self.c.episodes_done,
            adapter_name=self.publisher.current().adapter_name,
            metrics={k: v for k, v in self.latest.items() if not math.isnan(v)},
            phase=self.progress.phase.model_copy() if self.progress.phase else None,
        )

    async def _report(self) -> None:
        if self.status_cb is not None:
            await self.status_cb(self.status())

    async def _report_phase(self) -> None:
        if self.phase_cb is not None and self.progress.phase is not None:
            await self.phase_cb(self.progress.phase.model_copy())
