"""The online GRPO loop of one run: rollouts in, LoRA updates out, new adapters into vLLM.

    restore the latest checkpoint (adapter, optimizer, RNG, counters, un-acked results)
    serve the current adapter; evaluate the starting policy
    while episodes remain and nobody asked to stop:
        until `jobs_per_update` results are in:                          (Redis results stream)
            keep that many jobs in flight for the workers, plus           (Redis job stream)
                `prefetch_updates` updates' worth more: those keep the workers sampling
                while the learner updates (0 = synchronous: workers idle during updates)
            a job that failed on infrastructure is replaced, not counted; while nothing
                succeeds the replacements slow down (1 s, doubling to 10 s), wait for vLLM
                and load the current adapter into it again; after `outage_wait_s` the run fails
            drop stale and duplicate results
        advantages per group (A = r - mean r); one learner step           (halo_trainer.learner)
        every `sync_every` steps: save adapter v(k+1), load it into vLLM as `<run>-v<k+1>`,
            make it current for new samples, unload versions nobody may still use
            (a full-weights run: its trained modules' weights too, reloaded in place in the same
            pause of vLLM, so one version names one set of weights)
        every `eval_every` steps: greedy episodes on held-out seeds
        every `checkpoint_every` steps: checkpoint, then acknowledge the results it contains

Results are acknowledged only after the checkpoint that includes their update is committed, so a
`kill -9` at any point replays exactly the results whose effect was lost, and no result is used
twice in the final weights: the results queue acknowledges them and marks their job ids done in
one transaction (``StreamQueue.ack_many``), and a result whose job is marked done is a duplicate.
Results of jobs that failed on infrastructure are acknowledged at the same moment, so a job's fate
(used, replaced, or still in flight) is always the one the last checkpoint recorded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from halo.policy_client import EngineDead, PolicyClient
from halo.queue import Delivery
from halo.schemas import GroupMode, PolicyVersion, RolloutJob, RolloutResult, Transition
from halo.screenshots import ScreenshotStore
from halo.transport import CallError, ServiceUnavailable
from halo_trainer.batching import advantages, learner_batch, select_groups
from halo_trainer.checkpoint import CheckpointManager
from halo_trainer.config import EVAL_SEED_OFFSET, RunConfig
from halo_trainer.episodes import EpisodeLog
from halo_trainer.learner import Learner
from halo_trainer.metrics import GapAlarm, MetricsLog, rollout_metrics, wilson_interval
from halo_trainer.streams import LEARNER, jobs_queue, results_queue, set_current_policy
from halo_trainer.trackers import Trackers

logger = logging.getLogger("halo.trainer.loop")

JOB_TIMEOUT_S = 900.0  # a queued job whose result never came (dead-lettered) stops being waited for
RETRY_FIRST_S, RETRY_MAX_S = 1.0, 10.0  # pause between replacement rounds while nothing succeeds


class WeightReloadUnavailable(RuntimeError):
    """A full-weights run on a vLLM started without in-place weight reload (HALO_POLICY_WEIGHT_RELOAD)."""


class InfrastructureOutage(RuntimeError):
    """Every rollout failed on infrastructure (or vLLM stayed down) for longer than the run waits."""


def infra_failure(result: RolloutResult) -> str | None:
    """Why ``result`` is an infrastructure failure (nothing to learn or score from it), or None.

    A job can also come back "complete" with every episode cut short by the infrastructure (the
    browser died after the reset, say): such episodes say nothing about the policy either.
    """
    if result.infra_error is not None:
        return result.infra_error
    if result.episodes and all(e.infra_error for e in result.episodes):
        return "every episode ended on an infrastructure error"
    return None


@dataclass
class Counters:
    """Everything besides the weights that a checkpoint must restore."""

    updates: int = 0
    version: int = 0
    episodes_done: int = 0
    jobs_published: int = 0
    eval_rounds: int = 0
    infra_failed_jobs: int = 0  # replaced by new jobs, never counted as episodes
    jobs_timed_out: int = 0  # no result after JOB_TIMEOUT_S (dead-lettered): replaced
    inflight: dict[str, float] = field(default_factory=dict)  # job id -> time published
    pending_entries: list[str] = field(default_factory=list)  # results used since the last checkpoint
    pending_jobs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LoopStatus:
    """What the run manager reports of a run in progress (``RunLoop.status``)."""

    updates: int
    version: int
    episodes_done: int
    adapter_name: str  # what new samples use: the base model name at version 0
    metrics: dict[str, float]  # the latest update's metrics, NaN left out


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
        status_cb: Callable[[LoopStatus], Awaitable[None]] | None = None,
        trackers: Trackers | None = None,
    ) -> None:
        self.cfg, self.redis, self.policy, self.learner = cfg, redis, policy, learner
        self.processor, self.store, self.run_dir, self.settings = processor, store, Path(run_dir), settings
        self.jobs = jobs_queue(redis, settings)
        self.results = results_queue(redis, cfg.run_id)
        self.checkpoints = CheckpointManager(self.run_dir / "checkpoints", keep=settings.checkpoint_keep)
        self.trackers = trackers
        self.metrics = MetricsLog(self.run_dir / "metrics.jsonl", trackers=trackers)
        self.episodes = EpisodeLog(
            self.run_dir / "episodes.jsonl", cfg.record_episodes_every, cfg.group_mode, cfg.loss_type
        )
        self.c = Counters()
        self.status_cb = status_cb
        self.buffer: list[Delivery[RolloutResult]] = []
        self.failed_jobs: set[str] = set()  # train jobs whose infra-failed result this loop routed
        self.evals: dict[str, RolloutResult] = {}
        self.latest: dict[str, float] = {}
        self.started = time.monotonic()
        self.stop = asyncio.Event()
        self.nonce = secrets.token_hex(3)
        self.outage_wait_s: float = settings.outage_wait_s
        self._outage_since: float | None = None  # monotonic time of the first failure since a success
        self._last_failure = ""
        self._next_try = 0.0
        self._retry_s = RETRY_FIRST_S
        self._reload_checked = False  # the policy server was checked for weight reload (full-weights runs)
        self._sync_metrics: dict[str, float] = {}  # the last publish's timings, for the update's metrics
        self.gap_alarm = GapAlarm(cfg.behaviour_gap_alarm, cfg.run_id)

    # -- the loop ---------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> str:
        """Train until the episode budget is spent ("finished") or ``stop`` is set ("stopped")."""
        await self._start(stop)
        while self.c.episodes_done < self.cfg.episodes and not stop.is_set():
            results = await self._collect(self.cfg.jobs_per_update, stop)
            if not results:
                continue
            metrics = await self._update(results)
            if self.c.updates % self.cfg.sync_every == 0:
                await self._publish_new_version()
            await self._close_update(metrics)
        return await self._finish(stop)

    # The steps around an update that every algorithm's loop shares (MctsLoop.run calls them too).
    async def _start(self, stop: asyncio.Event) -> None:
        """Resume from the last checkpoint, serve its version, and take the baseline evaluation."""
        self.stop = stop
        await self._restore()
        await self._serve(self.c.version)
        if self.c.updates == 0 and self.c.eval_rounds == 0 and self.cfg.eval_every:
            await self._evaluate()

    async def _close_update(self, metrics: dict[str, float]) -> None:
        """Evaluate when due, record the update's metrics, checkpoint when due, report progress."""
        if self.cfg.eval_every and self.c.updates % self.cfg.eval_every == 0:
            metrics |= await self._evaluate()
        metrics["policy/version"] = float(self.c.version)
        metrics |= self._sync_metrics  # set by the publish before this (``latest`` is replaced below)
        self._sync_metrics = {}
        self.latest = metrics
        self.metrics.write(self.c.updates, self.c.version, metrics)
        if self.c.updates % self.cfg.checkpoint_every == 0:
            await self._checkpoint()
        await self._report()

    async def _finish(self, stop: asyncio.Event) -> str:
        """Evaluate the final policy (unless the last update just did), checkpoint, report; the run's end state."""
        if self.cfg.eval_every and not stop.is_set() and self.c.updates % self.cfg.eval_every:
            self.latest |= await self._evaluate()
            self.metrics.write(self.c.updates, self.c.version, self.latest)
        await self._checkpoint()
        await self._report()
        return "stopped" if stop.is_set() else "finished"

    # -- rollouts ---------------------------------------------------------------------------------
    def _job(
        self,
        index: int,
        *,
        purpose: str = "train",
        task: str | None = None,
        seed: int | None = None,
        attempt: int = 0,
    ) -> RolloutJob:
        cfg = self.cfg
        task = task or cfg.tasks[index % len(cfg.tasks)]
        # Train job ids are deterministic: after a crash the same job maps to the same results.
        # Eval ids are unique per attempt: an evaluation redone after a restart must really run
        # again, not be skipped as a duplicate of one whose results were already consumed.
        prefix = "j" if purpose == "train" else f"eval{self.c.eval_rounds}-{self.nonce}-"
        job_id = f"{cfg.run_id}-{prefix}{index}" + (f"-r{attempt}" if attempt else "")
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
            sampling=cfg.sampling,
        )

    def _episodes_per_job(self) -> int:
        return 1 if self.cfg.group_mode is GroupMode.STEP else self.cfg.num_generations

    def _jobs_needed(self) -> int:
        return math.ceil((self.cfg.episodes - self.c.episodes_done) / self._episodes_per_job())

    async def _top_up_jobs(self, target: int) -> None:
        """Publish jobs until ``target`` are in flight or done (results buffered), at the allowed pace."""
        now = time.time()
        for job_id, at in list(self.c.inflight.items()):
            if now - at > JOB_TIMEOUT_S:
                logger.warning("job %s: no result after %.0f s; replacing it", job_id, now - at)
                del self.c.inflight[job_id]
                self.c.jobs_timed_out += 1
        if len(self.c.inflight) + len(self.buffer) >= target or not await self._may_publish():
            return
        while len(self.c.inflight) + len(self.buffer) < target:
            job = self._job(self.c.jobs_published)
            # After a restart the counter is the checkpoint's: a job the dead loop published later may
            # have its result replayed already. Workers would skip it as done, and nothing would come.
            answered = await self._has_result(job.job_id)
            if not answered and job.job_id in self.failed_jobs:
                # Its replayed result was an infra failure: answered too, and replaced like any failed
                # job (the jobs counted past it). `_route` could not count it: the checkpoint's
                # `inflight` never had it.
                self.c.infra_failed_jobs += 1
            elif not answered:
                await self.jobs.publish(job, dedup_id=job.job_id)
                self.c.inflight[job.job_id] = now
            self.c.jobs_published += 1

    async def _collect(self, count: int, stop: asyncio.Event) -> list[Delivery[RolloutResult]]:
        """Wait for ``count`` train results (fewer when the episode budget needs fewer).

        Jobs are topped up inside the wait, so a job that fails is replaced while the loop waits
        and the wait never depends on jobs that no longer exist. Eval results are set aside for
        ``_evaluate``.

        With ``prefetch_updates`` k > 0, the jobs of the next k updates are published too: they
        are still in flight (or their results buffered) when this returns, so the workers keep
        sampling while the learner updates, publishes and evaluates (the asynchronous pipeline).
        Their transitions record the version that sampled them; those older than
        ``max_staleness`` are dropped by ``select_groups``, and the importance ratio against the
        behaviour log-probs corrects the rest. k = 0 is the synchronous loop: no job is in flight
        during an update. Either way no more jobs go out than the episode budget needs.
        """
        ahead = count * (1 + self.cfg.prefetch_updates)
        while not stop.is_set():
            needed = self._jobs_needed()
            target = min(count, needed)
            if len(self.buffer) >= target:
                break
            await self._top_up_jobs(min(ahead, needed))
            for d in await self.results.consume(LEARNER, count=count, block_ms=1000):
                await self._route(d)
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    async def _route(self, d: Delivery[RolloutResult]) -> None:
        r = d.message
        if r.purpose == "eval":
            self.evals[r.job_id] = r
            await self.results.ack_many([d.entry_id])
            return
        was_in_flight = self.c.inflight.pop(r.job_id, None) is not None
        if (failure := infra_failure(r)) is not None:
            # Nothing to learn from a job the infrastructure broke; `_top_up_jobs` replaces it. Its
            # result is acknowledged with the next checkpoint, which also records it as replaced.
            logger.warning("job %s failed on infrastructure (%s); replacing it", r.job_id, failure[:200])
            if was_in_flight:  # a duplicate, or a job already replaced after its timeout, counts once
                self.c.infra_failed_jobs += 1
            self.failed_jobs.add(r.job_id)  # replayed after a restart: `_top_up_jobs` must not republish it
            self._failed(failure)
            self.c.pending_entries.append(d.entry_id)
            return
        if await self._has_result(r.job_id):
            # A job replayed after its worker died between publishing and acknowledging. Not marked
            # done here: the first result's mark goes with the checkpoint that uses it.
            logger.info("duplicate result of job %s dropped", r.job_id)
            await self.results.ack_many([d.entry_id])
            return
        self._succeeded()
        self.episodes.write(r, self.c.updates)
        self.buffer.append(d)

    async def _has_result(self, job_id: str) -> bool:
        """Whether a result of ``job_id`` is buffered, used since the last checkpoint, or in one."""
        return (
            any(b.message.job_id == job_id for b in self.buffer)
            or job_id in self.c.pending_jobs
            or await self.results.is_done(job_id)
        )

    # -- outages ----------------------------------------------------------------------------------
    def _failed(self, why: str) -> None:
        if self._outage_since is None:
            self._outage_since = time.monotonic()
        self._last_failure = why

    def _succeeded(self) -> None:
        if self._outage_since is not None:
            logger.info("rollouts succeed again after %.1f s of failures", time.monotonic() - self._outage_since)
        self._outage_since, self._next_try, self._retry_s = None, 0.0, RETRY_FIRST_S

    async def _may_publish(self) -> bool:
        """Whether replacements may go out now; fails the run once the outage outlasts the wait.

        While jobs keep failing, replacement rounds are spaced out (a dead service would otherwise
        burn a job a second), and each round first checks that vLLM is up and serves the run's
        current adapter: a restarted vLLM serves only the base model, so the adapter is loaded again
        before any new job samples from it.
        """
        if self._outage_since is None:
            return True
        now = time.monotonic()
        waited = now - self._outage_since
        if waited > self.outage_wait_s:
            raise InfrastructureOutage(
                f"no rollout succeeded for {waited:.0f} s (the run waits {self.outage_wait_s:.0f} s, "
                f"HALO_TRAINER_OUTAGE_WAIT_S); last failure: {self._last_failure[:500]}"
            )
        if now < self._next_try:
            return False
        self._next_try, self._retry_s = now + self._retry_s, min(self._retry_s * 2, RETRY_MAX_S)
        try:
            await self.policy.health()
            await self._ensure_served(self.c.version)
        except CallError as exc:
            self._failed(f"policy server: {exc}")
            logger.warning("policy server not ready (%s); replacements wait", exc)
            return False
        return True

    # -- learning ---------------------------------------------------------------------------------
    async def _update(self, results: list[Delivery[RolloutResult]]) -> dict[str, float]:
        """Learn from ``results`` (``_learn_from``), then count them as used since the last checkpoint."""
        started = time.perf_counter()
        messages = [d.message for d in results]
        metrics = await self._learn_from(messages)
        self.c.updates += 1
        self.c.episodes_done += self._episodes_in(messages)
        self.c.pending_entries += [d.entry_id for d in results]
        self.c.pending_jobs += [r.job_id for r in messages]
        elapsed = time.monotonic() - self.started
        metrics |= {
            "train/update_s": time.perf_counter() - started,
            "rollout/episodes_per_s": self.c.episodes_done / max(elapsed, 1e-9),
            "rollout/episodes_done": float(self.c.episodes_done),
            "rollout/infra_failed_jobs": float(self.c.infra_failed_jobs),
            "rollout/jobs_timed_out": float(self.c.jobs_timed_out),
        }
        return metrics

    async def _learn_from(self, messages: list[RolloutResult]) -> dict[str, float]:
        """GRPO: advantages per group of fresh transitions, then the learner's step(s)."""
        transitions = [t for r in messages for t in r.transitions]
        selection = select_groups(transitions, self.c.version, self.cfg.max_staleness, self.cfg.group_mode)
        metrics = rollout_metrics(messages, selection, self.c.version)
        kept = [t for g in selection.groups for t in g]
        if kept:
            adv = [a for g in advantages(selection.groups, self.cfg.group_mode, self.cfg.loss_type) for a in g]
            metrics |= await asyncio.to_thread(self._learn, kept, adv)
            metrics |= self.gap_alarm.check(metrics)
        return metrics

    def _episodes_in(self, messages: list[RolloutResult]) -> int:
        return sum(len(r.episodes) for r in messages)

    def _learn(self, transitions: list[Transition], adv: list[float]) -> dict[str, float]:
        batch = learner_batch(
            transitions,
            adv,
            self.processor,
            self.store,
            use_behaviour_logprobs=self.cfg.use_behaviour_logprobs,
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

        A vLLM that is down (restarting after a crash, say) is waited for, up to ``outage_wait_s``.
        """
        deadline = time.monotonic() + self.outage_wait_s
        while True:
            try:
                return await self._serve_once(version)
            except (ServiceUnavailable, EngineDead) as exc:
                if time.monotonic() > deadline:
                    raise
                logger.warning("policy server unavailable while serving v%d (%s); waiting", version, exc)
                await asyncio.sleep(10)

    async def _serve_once(self, version: int) -> None:
        record = self._version_record(version)
        await self._check_weight_reload()
        await self._ensure_served(version)
        await set_current_policy(self.redis, record)
        await self._retire_old_versions(version)

    def _weights_path(self, version: int) -> Path | None:
        """The model folder of ``version``'s base weights, or None: the run trains LoRA alone, or
        version 0, whose base weights are the ones vLLM started with."""
        if version == 0 or not self.learner.full_weight_names():
            return None
        return self.run_dir / "weights" / f"v{version}"

    async def _check_weight_reload(self) -> None:
        """Refuse a full-weights run on a vLLM that cannot reload weights, before any sample is taken."""
        if self._reload_checked or not self.learner.full_weight_names():
            return
        if not await self.policy.weight_reload_available():
            raise WeightReloadUnavailable(
                f"run {self.cfg.run_id} trains full weights ({', '.join(self.learner.full_weight_names()[:3])}, ...) "
                f"but the policy server at {self.policy.base_url} cannot reload weights (no /collective_rpc): "
                "start it with HALO_POLICY_WEIGHT_RELOAD=true (vLLM's dev mode), or train LoRA alone"
            )
        self._reload_checked = True

    async def _ensure_served(self, version: int) -> None:
        """Load ``version``'s adapter into vLLM unless ``/v1/models`` already lists it.

        After a vLLM restart this is the only version that must come back: every sample reads the
        run's current version from Redis, so no new request names an older one, and the jobs that
        sampled from older ones failed with the server.

        A full-weights run serves the version's base weights with it, in one step under a pause
        (``PolicyClient.publish_weights``): the adapter's name then names one set of weights, also
        after a restart, where vLLM came back with the original weights and no adapter.
        """
        if version == 0:
            return
        record = self._version_record(version)
        if record.adapter_name in {m["id"] for m in await self.policy.models()}:
            return
        if not Path(record.adapter_path).exists():
            self.learner.save_adapter(record.adapter_path)
        if (weights := self._weights_path(version)) is not None:
            if not weights.exists():
                await asyncio.to_thread(self.learner.save_base_weights, weights)
            timing = await self.policy.publish_weights(
                record.adapter_name,
                record.adapter_path,
                str(weights),
                before_resume=lambda: set_current_policy(self.redis, record),
            )
            self._sync_metrics |= {f"policy/weights_{k}": v for k, v in timing.items()}
            logger.info(
                "weights and adapter %s served from %s (%.2f s)", record.adapter_name, weights, timing["total_s"]
            )
            return
        # Workers in other processes may still sample from the previous version: old versions
        # are unloaded by `_retire_old_versions`, by staleness, not by this client.
        seconds = await self.policy.publish_adapter(record.adapter_name, record.adapter_path)
        self._sync_metrics["policy/adapter_load_s"] = seconds
        logger.info("adapter %s loaded into vLLM from %s (%.2f s)", record.adapter_name, record.adapter_path, seconds)

    async def _publish_new_version(self) -> None:
        version = self.c.version + 1
        self.learner.save_adapter(self.run_dir / "adapters" / f"v{version}")
        if (weights := self._weights_path(version)) is not None:
            await asyncio.to_thread(self.learner.save_base_weights, weights)
        await self._serve(version)
        self.c.version = version

    async def release_weights(self) -> None:
        """A full-weights run's end: vLLM gets the base weights back as the learner loaded them, and
        the run's adapter (which named the trained weights) is unloaded. Without this, every later
        run and every base-model evaluation on that server would sample from this run's weights.
        Not called when the trainer shuts down: the run resumes, and serves its version again."""
        if self.c.version == 0 or not self.learner.full_weight_names():
            return
        folder = self.run_dir / "weights" / "v0"
        await asyncio.to_thread(self.learner.save_initial_base_weights, folder)
        seconds = await self.policy.reload_weights(str(folder))
        await self.policy.unload_adapter(self._version_record(self.c.version).adapter_name)
        await asyncio.to_thread(shutil.rmtree, folder, True)
        logger.info("run %s ended: vLLM serves the base weights again (%.2f s)", self.cfg.run_id, seconds)

    async def _retire_old_versions(self, current: int) -> None:
        """Unload adapters too old for any accepted transition (vLLM keeps a bounded number resident).

        A full-weights run keeps only the current version's weights folder: the older ones are
        served nowhere (``publish_weights`` unloaded their adapters), and on a GPU box each is the
        size of the model.
        """
        if self._weights_path(current) is not None:
            for old in (self.run_dir / "weights").glob("v*"):
                if old.name != f"v{current}":
                    await asyncio.to_thread(shutil.rmtree, old, True)
        oldest_needed = current - self.cfg.max_staleness
        if oldest_needed <= 1:
            return  # no adapter is old enough yet
        served = {m["id"] for m in await self.policy.models()}
        for v in range(max(1, oldest_needed - 5), oldest_needed):
            name = f"{self.cfg.run_id}-v{v}"
            if name in served:
                await self.policy.unload_adapter(name)

    # -- evaluation -------------------------------------------------------------------------------
    async def _evaluate(self) -> dict[str, float]:
        """Greedy episodes of the current policy on held-out seeds; success rate with a 95% interval.

        Each of the ``eval_episodes`` seeds is one job. A job that fails on infrastructure is
        never scored: it is played again (same task and seed, new job id), paced and bounded like
        training's replacements. ``eval/episodes`` is how many ran; ``eval/episodes_asked`` how many
        were asked for (fewer ran only after a stop or a job lost for ``JOB_TIMEOUT_S``).
        """
        cfg = self.cfg

        def slot_job(i: int, attempt: int) -> RolloutJob:
            task = cfg.tasks[i % len(cfg.tasks)]
            return self._job(i, purpose="eval", task=task, seed=EVAL_SEED_OFFSET + i, attempt=attempt)

        self.evals = {}
        attempts = dict.fromkeys(range(cfg.eval_episodes), 0)
        waiting: dict[int, tuple[RolloutJob, float]] = {}  # slot -> (its job in flight, when published)
        to_publish = set(attempts)
        done: dict[int, RolloutResult] = {}
        replaced = 0
        # Workers drop a stopped run's jobs, so a stop ends the wait too.
        while (to_publish or waiting) and not self.stop.is_set():
            if to_publish and await self._may_publish():
                for i in sorted(to_publish):
                    job = slot_job(i, attempts[i])
                    await self.jobs.publish(job, dedup_id=job.job_id)
                    waiting[i] = (job, time.monotonic())
                to_publish.clear()
            for d in await self.results.consume(LEARNER, count=16, block_ms=1000):
                await self._route(d)
            for i, (job, at) in list(waiting.items()):
                result = self.evals.pop(job.job_id, None)
                if result is None:
                    if time.monotonic() - at > JOB_TIMEOUT_S:
                        logger.warning("eval job %s: no result after %.0f s; not scored", job.job_id, JOB_TIMEOUT_S)
                        del waiting[i]
                    continue
                del waiting[i]
                if (failure := infra_failure(result)) is not None or any(e.infra_error for e in result.episodes):
                    logger.warning("eval job %s failed on infrastructure (%s); playing it again", job.job_id, failure)
                    self._failed(failure or "an eval episode ended on an infrastructure error")
                    attempts[i] += 1
                    replaced += 1
                    to_publish.add(i)
                else:
                    self._succeeded()
                    done[i] = result
        recorded = [rec for r in done.values() for rec in self.episodes.write(r, self.c.updates)]
        if self.trackers is not None and recorded:  # one episode per evaluation, a different slot each time
            await asyncio.to_thread(
                self.trackers.log_episode, self.c.updates, recorded[self.c.eval_rounds % len(recorded)], self.store
            )
        episodes = [e for r in done.values() for e in r.episodes]
        self.c.eval_rounds += 1
        if not episodes:  # stopped before any episode ended: nothing was measured, nothing is recorded
            logger.info("eval after %d updates: no episode ran (the run stopped)", self.c.updates)
            return {}
        successes = sum(1 for e in episodes if e.success)
        low, high = wilson_interval(successes, len(episodes))
        out = {
            "eval/success_rate": successes / len(episodes),
            "eval/ci_low": low,
            "eval/ci_high": high,
            "eval/episodes": float(len(episodes)),
            "eval/episodes_asked": float(cfg.eval_episodes),
            "eval/infra_replaced": float(replaced),
            "eval/mean_return": sum(e.episode_return for e in episodes) / len(episodes),
            "eval/policy_version": float(self.c.version),
        }
        with (self.run_dir / "eval.jsonl").open("a") as fh:
            fh.write(json.dumps({"update": self.c.updates, "time": time.time(), **out}) + "\n")
        logger.info(
            "eval after %d updates (v%d): success %.3f [%.3f, %.3f] over %d of %d episodes (%d replaced)",
            self.c.updates,
            self.c.version,
            out["eval/success_rate"],
            low,
            high,
            len(episodes),
            cfg.eval_episodes,
            replaced,
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
        """Acknowledge the results used since the last checkpoint and mark their jobs done, atomically.

        Either list may be empty alone: results of replaced jobs are acknowledged but not used.
        """
        await self.results.ack_many(self.c.pending_entries, self.c.pending_jobs)
        self.c.pending_entries, self.c.pending_jobs = [], []

    async def _restore(self) -> None:
        checkpoint = await asyncio.to_thread(self.checkpoints.resume, self.learner)
        if checkpoint is not None:
            self.c = Counters(**checkpoint.extra)
        await self._ack_pending()  # the checkpoint was committed, its acknowledgement may not have been
        # Results delivered to the dead learner but not acknowledged come back, before new ones
        # (also when it died before its first checkpoint: their jobs are done and will not rerun).
        for d in await self.results.pending(LEARNER):
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

    def status(self) -> LoopStatus:
        return LoopStatus(
            updates=self.c.updates,
            version=self.c.version,
            episodes_done=self.c.episodes_done,
            adapter_name=self._version_record(self.c.version).adapter_name,
            metrics={k: v for k, v in self.latest.items() if not math.isnan(v)},
        )

    async def _report(self) -> None:
        if self.status_cb is not None:
            await self.status_cb(self.status())
