"""The online GRPO loop of one run: rollouts in, LoRA updates out, new adapters into vLLM.

    restore the latest checkpoint (adapter, optimizer, RNG, counters, un-acked results)
    serve the current adapter; evaluate the starting policy
    while episodes remain and nobody asked to stop:
        keep `jobs_per_update` rollout jobs queued for the workers       (Redis job stream)
        take `jobs_per_update` results; drop stale, infra and duplicate  (Redis results stream)
        advantages per group (A = r - mean r); one learner step           (halo_trainer.learner)
        every `sync_every` steps: save adapter v(k+1), load it into vLLM as `<run>-v<k+1>`,
            make it current for new samples, unload versions nobody may still use
        every `eval_every` steps: greedy episodes on held-out seeds
        every `checkpoint_every` steps: checkpoint, then acknowledge the results it contains

Results are acknowledged only after the checkpoint that includes their update is committed, so a
`kill -9` at any point replays exactly the results whose effect was lost, and no result is used
twice in the final weights (job ids already used are recorded with the acknowledgement).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from halo.policy_client import PolicyClient, PolicyEngineDead, PolicyTimeout, PolicyUnavailable
from halo.prompts import tool_call_regex
from halo.queue import Delivery
from halo.schemas import GroupMode, PolicyVersion, RolloutJob, RolloutResult, Transition
from halo.screenshots import ScreenshotStore
from halo_trainer import keys
from halo_trainer.batching import advantages, learner_batch, select_groups
from halo_trainer.checkpoint import CheckpointManager
from halo_trainer.config import EVAL_SEED_OFFSET, RunConfig
from halo_trainer.learner import Learner
from halo_trainer.metrics import MetricsLog, rollout_metrics, wilson_interval
from halo_trainer.worker import jobs_queue, results_queue

logger = logging.getLogger("halo.trainer.loop")

JOB_TIMEOUT_S = 900.0  # a queued job whose result never came (dead-lettered) stops being waited for
POLICY_OUTAGE_S = 900.0  # how long the loop waits for a dead vLLM to come back before the run fails


@dataclass
class Counters:
    """Everything besides the weights that a checkpoint must restore."""

    updates: int = 0
    version: int = 0
    episodes_done: int = 0
    jobs_published: int = 0
    eval_rounds: int = 0
    infra_failed_jobs: int = 0  # replaced by new jobs, never counted as episodes
    inflight: dict[str, float] = field(default_factory=dict)  # job id -> time published
    pending_entries: list[str] = field(default_factory=list)  # results used since the last checkpoint
    pending_jobs: list[str] = field(default_factory=list)


class RunLoop:
    def __init__(
        self,
        cfg: RunConfig,
        *,
        redis: aioredis.Redis,
        policy: PolicyClient,
        learner: Learner,
        processor: Any,
        store: ScreenshotStore,
        run_dir: Path,
        settings: Any,
        status_cb=None,
    ) -> None:
        self.cfg, self.redis, self.policy, self.learner = cfg, redis, policy, learner
        self.processor, self.store, self.run_dir, self.settings = processor, store, Path(run_dir), settings
        self.jobs = jobs_queue(redis, settings)
        self.results = results_queue(redis, cfg.run_id)
        self.checkpoints = CheckpointManager(self.run_dir / "checkpoints", keep=settings.checkpoint_keep)
        self.metrics = MetricsLog(self.run_dir / "metrics.jsonl")
        self.c = Counters()
        self.status_cb = status_cb
        self.buffer: list[Delivery[RolloutResult]] = []
        self.evals: dict[str, RolloutResult] = {}
        self.latest: dict[str, float] = {}
        self.started = time.monotonic()
        self.stop = asyncio.Event()
        self.nonce = secrets.token_hex(3)
        if policy.structured_outputs == "json":
            # The learner replays regex grammars only; under an unreplayed JSON grammar its
            # log-probs would be over another distribution than the one vLLM sampled from.
            raise ValueError("structured_outputs=json cannot be replayed by the learner: use regex or off")

    # -- the loop ---------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> str:
        """Train until the episode budget is spent ("finished") or ``stop`` is set ("stopped")."""
        self.stop = stop
        await self._restore()
        await self._serve(self.c.version)
        if self.c.updates == 0 and self.c.eval_rounds == 0 and self.cfg.eval_every:
            await self._evaluate()
        while self.c.episodes_done < self.cfg.episodes and not stop.is_set():
            await self._top_up_jobs()
            results = await self._collect(self.cfg.jobs_per_update, stop)
            if not results:
                continue
            metrics = await self._update(results)
            if self.c.updates % self.cfg.sync_every == 0:
                await self._publish_new_version()
            if self.cfg.eval_every and self.c.updates % self.cfg.eval_every == 0:
                metrics |= await self._evaluate()
            metrics["policy/version"] = float(self.c.version)
            self.latest = metrics
            self.metrics.write(self.c.updates, self.c.version, metrics)
            if self.c.updates % self.cfg.checkpoint_every == 0:
                await self._checkpoint()
            await self._report()
        if self.cfg.eval_every and not stop.is_set() and self.c.updates % self.cfg.eval_every:
            self.latest |= await self._evaluate()
            self.metrics.write(self.c.updates, self.c.version, self.latest)
        await self._checkpoint()
        await self._report()
        return "stopped" if stop.is_set() else "finished"

    # -- rollouts ---------------------------------------------------------------------------------
    def _job(
        self, index: int, *, purpose: str = "train", task: str | None = None, seed: int | None = None
    ) -> RolloutJob:
        cfg = self.cfg
        task = task or cfg.tasks[index % len(cfg.tasks)]
        # Train job ids are deterministic: after a crash the same job maps to the same results.
        # Eval ids are unique per attempt: an evaluation redone after a restart must really run
        # again, not be skipped as a duplicate of one whose results were already consumed.
        prefix = "j" if purpose == "train" else f"eval{self.c.eval_rounds}-{self.nonce}-"
        job_id = f"{cfg.run_id}-{prefix}{index}"
        train = purpose == "train"
        return RolloutJob(
            job_id=job_id,
            run_id=cfg.run_id,
            task_id=task,
            group_id=job_id,
            group_mode=cfg.group_mode if train else GroupMode.EPISODE,
            group_size=cfg.num_generations if train else 1,
            policy=self._version_record(self.c.version),
            temperature=cfg.temperature if train else 0.0,
            seed=seed if seed is not None else cfg.seed * 100_003 + index,
            max_steps=cfg.max_steps,
            branch=cfg.branch,
            purpose=purpose,
        )

    def _episodes_per_job(self) -> int:
        return 1 if self.cfg.group_mode is GroupMode.STEP else self.cfg.num_generations

    async def _top_up_jobs(self) -> None:
        now = time.time()
        for job_id, at in list(self.c.inflight.items()):
            if now - at > JOB_TIMEOUT_S:
                logger.warning("job %s: no result after %.0f s; no longer waited for", job_id, now - at)
                del self.c.inflight[job_id]
        budget = math.ceil((self.cfg.episodes - self.c.episodes_done) / self._episodes_per_job())
        while len(self.c.inflight) < self.cfg.jobs_per_update and len(self.c.inflight) < budget:
            job = self._job(self.c.jobs_published)
            await self.jobs.publish(job, dedup_id=job.job_id)
            self.c.inflight[job.job_id] = now
            self.c.jobs_published += 1

    async def _collect(self, count: int, stop: asyncio.Event) -> list[Delivery[RolloutResult]]:
        """Wait for ``count`` train results (eval results are set aside for ``_evaluate``)."""
        while len(self.buffer) < count and not stop.is_set():
            for d in await self.results.consume("learner", count=count, block_ms=1000):
                await self._route(d)
            if not self.c.inflight and self.buffer:
                break  # the episode budget is spent: learn from what came back
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    async def _route(self, d: Delivery[RolloutResult]) -> None:
        r = d.message
        if r.purpose == "eval":
            self.evals[r.job_id] = r
            await self.redis.xack(self.results.stream, self.results.group, d.entry_id)
            return
        self.c.inflight.pop(r.job_id, None)
        if r.infra_error is not None:
            # Nothing to learn from a job the infrastructure broke; `_top_up_jobs` replaces it.
            logger.warning("job %s failed on infrastructure (%s); replacing it", r.job_id, r.infra_error[:200])
            self.c.infra_failed_jobs += 1
            await self.redis.xack(self.results.stream, self.results.group, d.entry_id)
            return
        if r.job_id in self.c.pending_jobs or await self.redis.sismember(keys.used_jobs(self.cfg.run_id), r.job_id):
            logger.info("duplicate result of job %s dropped", r.job_id)
            await self.redis.xack(self.results.stream, self.results.group, d.entry_id)
            return
        self.buffer.append(d)

    # -- learning ---------------------------------------------------------------------------------
    async def _update(self, results: list[Delivery[RolloutResult]]) -> dict[str, float]:
        started = time.perf_counter()
        messages = [d.message for d in results]
        transitions = [t for r in messages for t in r.transitions]
        selection = select_groups(transitions, self.c.version, self.cfg.max_staleness, self.cfg.group_mode)
        metrics = rollout_metrics(messages, selection, self.c.version)
        kept = [t for g in selection.groups for t in g]
        if kept:
            adv = [a for g in advantages(selection.groups, self.cfg.group_mode, self.cfg.loss_type) for a in g]
            metrics |= await asyncio.to_thread(self._learn, kept, adv)
        self.c.updates += 1
        self.c.episodes_done += sum(len(r.episodes) for r in messages)
        self.c.pending_entries += [d.entry_id for d in results]
        self.c.pending_jobs += [r.job_id for r in messages]
        elapsed = time.monotonic() - self.started
        metrics |= {
            "train/update_s": time.perf_counter() - started,
            "rollout/episodes_per_s": self.c.episodes_done / max(elapsed, 1e-9),
            "rollout/episodes_done": float(self.c.episodes_done),
            "rollout/infra_failed_jobs": float(self.c.infra_failed_jobs),
        }
        return metrics

    def _learn(self, transitions: list[Transition], adv: list[float]) -> dict[str, float]:
        batch = learner_batch(
            transitions,
            adv,
            self.processor,
            self.store,
            history_limit=self.policy.history_limit,
            use_behaviour_logprobs=self.cfg.use_behaviour_logprobs,
            grammar=tool_call_regex() if self.policy.structured_outputs == "regex" else None,
            vocab_size=self.learner.vocab_size,
        )
        metrics: dict[str, float] = {}
        for _ in range(self.cfg.epochs_per_batch):
            metrics = self.learner.update(batch)
        return metrics

    # -- weight sync ------------------------------------------------------------------------------
    def _version_record(self, version: int) -> PolicyVersion:
        name = self.policy.base_model if version == 0 else f"{self.cfg.run_id}-v{version}"
        path = None if version == 0 else str(self.run_dir / "adapters" / f"v{version}")
        return PolicyVersion(
            run_id=self.cfg.run_id, version=version, adapter_name=name, adapter_path=path, created_at=time.time()
        )

    async def _serve(self, version: int) -> None:
        """Make ``version`` the one new samples use: load it into vLLM (if needed), then tell the workers.

        A vLLM that is down (restarting after a crash, say) is waited for, up to ``POLICY_OUTAGE_S``.
        """
        deadline = time.monotonic() + POLICY_OUTAGE_S
        while True:
            try:
                return await self._serve_once(version)
            except (PolicyUnavailable, PolicyTimeout, PolicyEngineDead) as exc:
                if time.monotonic() > deadline:
                    raise
                logger.warning("policy server unavailable while serving v%d (%s); waiting", version, exc)
                await asyncio.sleep(10)

    async def _serve_once(self, version: int) -> None:
        record = self._version_record(version)
        if version > 0:
            served = {m["id"] for m in await self.policy.models()}
            if record.adapter_name not in served:
                if not Path(record.adapter_path).exists():
                    self.learner.save_adapter(record.adapter_path)
                # Workers in other processes may still sample from the previous version: old versions
                # are unloaded by `_retire_old_versions`, by staleness, not by this client.
                seconds = await self.policy.publish_adapter(
                    record.adapter_name, record.adapter_path, retire_previous=False
                )
                self.latest["policy/adapter_load_s"] = seconds
        await self.redis.set(keys.policy(self.cfg.run_id), record.model_dump_json())
        await self._retire_old_versions(version)

    async def _publish_new_version(self) -> None:
        version = self.c.version + 1
        self.learner.save_adapter(self.run_dir / "adapters" / f"v{version}")
        await self._serve(version)
        self.c.version = version

    async def _retire_old_versions(self, current: int) -> None:
        """Unload adapters too old for any accepted transition (vLLM keeps a bounded number resident)."""
        served = {m["id"] for m in await self.policy.models()}
        oldest_needed = current - self.cfg.max_staleness
        for v in range(max(1, oldest_needed - 5), oldest_needed):
            name = f"{self.cfg.run_id}-v{v}"
            if name in served:
                await self.policy.unload_adapter(name)

    # -- evaluation -------------------------------------------------------------------------------
    async def _evaluate(self) -> dict[str, float]:
        """Greedy episodes of the current policy on held-out seeds; success rate with a 95% interval."""
        cfg = self.cfg
        jobs = [
            self._job(i, purpose="eval", task=cfg.tasks[i % len(cfg.tasks)], seed=EVAL_SEED_OFFSET + i)
            for i in range(cfg.eval_episodes)
        ]
        self.evals = {}
        for job in jobs:
            await self.jobs.publish(job, dedup_id=job.job_id)
        wanted = {j.job_id for j in jobs}
        deadline = time.monotonic() + JOB_TIMEOUT_S
        # Workers drop a stopped run's jobs, so a stop ends the wait too.
        while not wanted <= set(self.evals) and time.monotonic() < deadline and not self.stop.is_set():
            for d in await self.results.consume("learner", count=16, block_ms=1000):
                await self._route(d)
        episodes = [e for j in wanted if j in self.evals for e in self.evals[j].episodes]
        successes = sum(1 for e in episodes if e.success)
        low, high = wilson_interval(successes, len(episodes))
        self.c.eval_rounds += 1
        out = {
            "eval/success_rate": successes / len(episodes) if episodes else float("nan"),
            "eval/ci_low": low,
            "eval/ci_high": high,
            "eval/episodes": float(len(episodes)),
            "eval/mean_return": sum(e.episode_return for e in episodes) / max(len(episodes), 1),
            "eval/policy_version": float(self.c.version),
        }
        with (self.run_dir / "eval.jsonl").open("a") as fh:
            fh.write(json.dumps({"update": self.c.updates, "time": time.time(), **out}) + "\n")
        logger.info(
            "eval after %d updates (v%d): success %.3f [%.3f, %.3f] over %d episodes",
            self.c.updates,
            self.c.version,
            out["eval/success_rate"],
            low,
            high,
            len(episodes),
        )
        return out

    # -- durability -------------------------------------------------------------------------------
    async def _checkpoint(self) -> None:
        """Commit weights + counters, then acknowledge the results they include (in that order)."""
        extra = asdict(self.c)  # results buffered but not yet used stay unacknowledged: replayed on resume
        await asyncio.to_thread(
            self.checkpoints.save, self.learner, config=self.cfg.model_dump(mode="json"), extra=extra
        )
        await self._ack_pending()

    async def _ack_pending(self) -> None:
        """Acknowledge the results used since the last checkpoint and record their job ids, atomically."""
        if self.c.pending_entries:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.xack(self.results.stream, self.results.group, *self.c.pending_entries)
                pipe.sadd(keys.used_jobs(self.cfg.run_id), *self.c.pending_jobs)
                await pipe.execute()
        self.c.pending_entries, self.c.pending_jobs = [], []

    async def _restore(self) -> None:
        checkpoint = await asyncio.to_thread(self.checkpoints.resume, self.learner)
        if checkpoint is not None:
            self.c = Counters(**checkpoint.extra)
        await self._ack_pending()  # the checkpoint was committed, its acknowledgement may not have been
        # Results delivered to the dead learner but not acknowledged come back, before new ones
        # (also when it died before its first checkpoint: their jobs are done and will not rerun).
        for d in await self.results.pending("learner"):
            await self._route(d)
        if checkpoint is None and not self.buffer:
            return
        logger.info(
            "resumed run %s at update %d (v%d, %d episodes, %d results replayed)",
            self.cfg.run_id,
            self.c.updates,
            self.c.version,
            self.c.episodes_done,
            len(self.buffer),
        )

    async def _report(self) -> None:
        if self.status_cb is not None:
            await self.status_cb(self)
