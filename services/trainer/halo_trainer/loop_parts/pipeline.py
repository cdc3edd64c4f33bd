"""Jobs out, results in, exactly once: the part of a run loop that talks to the workers.

    keep `target` jobs in flight or answered                                (Redis job stream)
    route each result: an eval's to its round; an infrastructure failure is replaced, not counted;
        a duplicate (its job already answered) is dropped; the rest wait in ``buffer``
    while nothing succeeds, replacements slow down (1 s, doubling to 10 s) and first check that
        vLLM is up and serves the run's version; after `outage_wait_s` the run fails
    results are acknowledged, and their jobs marked done, only with the checkpoint that uses them

Training and evaluation jobs go through the same publish, route and replace path: a training job
is one index of the run's deterministic job sequence, an evaluation job one slot of a round.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

from halo.queue import Delivery, StreamQueue
from halo.schemas import RolloutJob, RolloutResult
from halo.transport import CallError
from halo_trainer.loop_parts.progress import Progress
from halo_trainer.loop_parts.state import Counters
from halo_trainer.observe.episode_log import EpisodeLog
from halo_trainer.streams import LEARNER

logger = logging.getLogger("halo.trainer.loop")

JOB_TIMEOUT_S = 900.0  # a queued job whose result never came (dead-lettered) stops being waited for
RETRY_FIRST_S, RETRY_MAX_S = 1.0, 10.0  # pause between replacement rounds while nothing succeeds


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


class Outage:
    """How long rollouts have failed, and when replacements may go out again."""

    def __init__(self, wait_s: float, ready: Callable[[], Awaitable[None]], progress: Progress | None = None) -> None:
        self.wait_s = wait_s
        self._ready = ready  # raises CallError unless vLLM is up and serves the run's version
        self.progress = progress or Progress()  # where a wait is said while it lasts
        self._since: float | None = None  # monotonic time of the first failure since a success
        self._last_failure = ""
        self._next_try = 0.0
        self._retry_s = RETRY_FIRST_S

    def failed(self, why: str) -> None:
        if self._since is None:
            self._since = time.monotonic()
        self._last_failure = why
        self.progress.note(f"rollouts failing on infrastructure, replaced (up to {self.wait_s:.0f} s): {why[:300]}")

    def succeeded(self) -> None:
        if self._since is not None:
            logger.info("rollouts succeed again after %.1f s of failures", time.monotonic() - self._since)
            self.progress.note(None)
        self._since, self._next_try, self._retry_s = None, 0.0, RETRY_FIRST_S

    async def may_publish(self) -> bool:
        """Whether replacements may go out now; fails the run once the outage outlasts the wait.

        While jobs keep failing, replacement rounds are spaced out (a dead service would otherwise
        burn a job a second), and each round first checks that vLLM is up and serves the run's
        current adapter: a restarted vLLM serves only the base model, so the adapter is loaded again
        before any new job samples from it.
        """
        if self._since is None:
            return True
        now = time.monotonic()
        waited = now - self._since
        if waited > self.wait_s:
            raise InfrastructureOutage(
                f"no rollout succeeded for {waited:.0f} s (the run waits {self.wait_s:.0f} s, "
                f"HALO_TRAINER_OUTAGE_WAIT_S); last failure: {self._last_failure[:500]}"
            )
        if now < self._next_try:
            return False
        self._next_try, self._retry_s = now + self._retry_s, min(self._retry_s * 2, RETRY_MAX_S)
        try:
            await self._ready()
        except CallError as exc:
            self.failed(f"policy server: {exc}")
            self.progress.note(f"waiting for vLLM ({waited:.0f} s of {self.wait_s:.0f}): {str(exc)[:300]}")
            logger.warning("policy server not ready (%s); replacements wait", exc)
            return False
        return True


class JobPipeline:
    def __init__(
        self,
        *,
        jobs: StreamQueue[RolloutJob],
        results: StreamQueue[RolloutResult],
        counters: Counters,
        episodes: EpisodeLog,
        outage: Outage,
        train_job: Callable[[int], RolloutJob],
        episodes_per_job: int,
        episode_budget: int,
        prefetch_updates: int,
        progress: Progress | None = None,
    ) -> None:
        self.jobs, self.results, self.c, self.episodes, self.outage = jobs, results, counters, episodes, outage
        self.progress = progress or Progress()
        self.train_job, self.episodes_per_job = train_job, episodes_per_job
        self.episode_budget, self.prefetch_updates = episode_budget, prefetch_updates
        self.buffer: list[Delivery[RolloutResult]] = []
        self.failed_jobs: set[str] = set()  # train jobs whose infra-failed result this loop routed
        self.evals: dict[str, RolloutResult] = {}

    # -- training jobs ----------------------------------------------------------------------------
    def jobs_needed(self) -> int:
        return math.ceil((self.episode_budget - self.c.episodes_done) / self.episodes_per_job)

    async def collect(self, count: int, stop: asyncio.Event) -> list[Delivery[RolloutResult]]:
        """Wait for ``count`` train results (fewer when the episode budget needs fewer).

        Jobs are topped up inside the wait, so a job that fails is replaced while the loop waits
        and the wait never depends on jobs that no longer exist. Eval results are set aside for
        the evaluation round that waits for them.

        With ``prefetch_updates`` k > 0, the jobs of the next k updates are published too: they
        are still in flight (or their results buffered) when this returns, so the workers keep
        sampling while the learner updates, publishes and evaluates (the asynchronous pipeline).
        Their transitions record the version that sampled them; those older than
        ``max_staleness`` are dropped by ``select_groups``, and the importance ratio against the
        behaviour log-probs corrects the rest. k = 0 is the synchronous loop: no job is in flight
        during an update. Either way no more jobs go out than the episode budget needs.
        """
        ahead = count * (1 + self.prefetch_updates)
        while not stop.is_set():
            needed = self.jobs_needed()
            self.progress.advance(min(len(self.buffer), count), min(count, needed))
            await self.progress.tick()
            if len(self.buffer) >= min(count, needed):
                break
            await self._top_up(min(ahead, needed))
            await self._receive(count)
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    def used(self, results: list[Delivery[RolloutResult]]) -> None:
        """``results`` went into an update: acknowledged with the next checkpoint."""
        self.c.pending_entries += [d.entry_id for d in results]
        self.c.pending_jobs += [d.message.job_id for d in results]

    async def _top_up(self, target: int) -> None:
        """Publish jobs until ``target`` are in flight or done (results buffered), at the allowed pace."""
        now = time.time()
        for job_id, at in list(self.c.inflight.items()):
            if now - at > JOB_TIMEOUT_S:
                logger.warning("job %s: no result after %.0f s; replacing it", job_id, now - at)
                self.progress.note(f"reclaimed job {job_id}: no result after {now - at:.0f} s; replaced")
                del self.c.inflight[job_id]
                self.c.jobs_timed_out += 1
        if len(self.c.inflight) + len(self.buffer) >= target or not await self.outage.may_publish():
            return
        while len(self.c.inflight) + len(self.buffer) < target:
            job = self.train_job(self.c.jobs_published)
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

    # -- results ----------------------------------------------------------------------------------
    async def _receive(self, count: int) -> None:
        for d in await self.results.consume(LEARNER, count=count, block_ms=1000):
            await self.route(d)

    async def route(self, d: Delivery[RolloutResult]) -> None:
        r = d.message
        if r.purpose == "eval":
            self.evals[r.job_id] = r
            await self.results.ack_many([d.entry_id])
            return
        was_in_flight = self.c.inflight.pop(r.job_id, None) is not None
        if (failure := infra_failure(r)) is not None:
            # Nothing to learn from a job the infrastructure broke; `_top_up` replaces it. Its
            # result is acknowledged with the next checkpoint, which also records it as replaced.
            logger.warning("job %s failed on infrastructure (%s); replacing it", r.job_id, failure[:200])
            if was_in_flight:  # a duplicate, or a job already replaced after its timeout, counts once
                self.c.infra_failed_jobs += 1
            self.failed_jobs.add(r.job_id)  # replayed after a restart: `_top_up` must not republish it
            self.outage.failed(failure)
            self.c.pending_entries.append(d.entry_id)
            return
        if await self._has_result(r.job_id):
            # A job replayed after its worker died between publishing and acknowledging. Not marked
            # done here: the first result's mark goes with the checkpoint that uses it.
            logger.info("duplicate result of job %s dropped", r.job_id)
            await self.results.ack_many([d.entry_id])
            return
        self.outage.succeeded()
        self.episodes.write(r, self.c.updates)
        self.buffer.append(d)

    async def _has_result(self, job_id: str) -> bool:
        """Whether a result of ``job_id`` is buffered, used since the last checkpoint, or in one."""
        return (
            any(b.message.job_id == job_id for b in self.buffer)
            or job_id in self.c.pending_jobs
            or await self.results.is_done(job_id)
        )

    async def ack_pending(self) -> None:
        """Acknowledge the results used since the last checkpoint and mark their jobs done, atomically.

        Either list may be empty alone: results of replaced jobs are acknowledged but not used.
        """
        await self.results.ack_many(self.c.pending_entries, self.c.pending_jobs)
        self.c.pending_entries, self.c.pending_jobs = [], []

    async def replay_unacked(self) -> int:
        """Route the results delivered to a dead learner but never acknowledged; how many were buffered."""
        for d in await self.results.pending(LEARNER):
            await self.route(d)
        return len(self.buffer)

    # -- evaluation jobs --------------------------------------------------------------------------
    async def play_slots(
        self, slots: int, slot_job: Callable[[int, int], RolloutJob], stop: asyncio.Event
    ) -> tuple[dict[int, RolloutResult], int]:
        """One result per slot (``slot_job(slot, attempt)``), each played until the infrastructure
        lets it finish; the results by slot and how many jobs were replaced.

        A job that fails on infrastructure (or any of whose episodes did) is never scored: it is
        played again (same task and seed, new job id), paced by the same outage rules as training's
        replacements. A slot whose job stays unanswered for ``JOB_TIMEOUT_S`` is left out, and a
        stop ends the wait (workers drop a stopped run's jobs).
        """
        self.evals = {}
        attempts = dict.fromkeys(range(slots), 0)
        waiting: dict[int, tuple[RolloutJob, float]] = {}  # slot -> (its job in flight, when published)
        to_publish = set(attempts)
        done: dict[int, RolloutResult] = {}
        replaced = 0
        while (to_publish or waiting) and not stop.is_set():
            if to_publish and await self.outage.may_publish():
                for i in sorted(to_publish):
                    job = slot_job(i, attempts[i])
                    await self.jobs.publish(job, dedup_id=job.job_id)
                    waiting[i] = (job, time.monotonic())
                to_publish.clear()
            await self._receive(16)
            self.progress.advance(len(done))
            await self.progress.tick()
            for i, (job, at) in list(waiting.items()):
                result = self.evals.pop(job.job_id, None)
                if result is None:
                    if time.monotonic() - at > JOB_TIMEOUT_S:
                        logger.warning("eval job %s: no result after %.0f s; not scored", job.job_id, JOB_TIMEOUT_S)
                        self.progress.note(f"eval job {job.job_id}: no result after {JOB_TIMEOUT_S:.0f} s; not scored")
                        del waiting[i]
                    continue
                del waiting[i]
                if (failure := infra_failure(result)) is not None or any(e.infra_error for e in result.episodes):
                    logger.warning("eval job %s failed on infrastructure (%s); playing it again", job.job_id, failure)
                    self.outage.failed(failure or "an eval episode ended on an infrastructure error")
                    attempts[i] += 1
                    replaced += 1
                    to_publish.add(i)
                else:
                    self.outage.succeeded()
                    done[i] = result
        self.progress.advance(len(done))
        await self.progress.tick()
        return done, replaced
