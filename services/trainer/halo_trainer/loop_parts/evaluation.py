"""A run's periodic evaluation: greedy episodes of the current policy on held-out seeds."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from halo.schemas import PolicyVersion
from halo.screenshots import ScreenshotStore
from halo_trainer.config import RunConfig
from halo_trainer.loop_parts.jobs import eval_job
from halo_trainer.loop_parts.pipeline import JobPipeline
from halo_trainer.loop_parts.state import Counters
from halo_trainer.observe.episode_log import EpisodeLog
from halo_trainer.observe.metrics import wilson_interval
from halo_trainer.observe.task_counts import eval_task_counts
from halo_trainer.observe.trackers import Trackers

logger = logging.getLogger("halo.trainer.loop")


class Evaluator:
    def __init__(
        self,
        *,
        cfg: RunConfig,
        pipeline: JobPipeline,
        counters: Counters,
        current: Callable[[], PolicyVersion],
        episodes: EpisodeLog,
        trackers: Trackers | None,
        store: ScreenshotStore,
        run_dir: Path,
    ) -> None:
        self.cfg, self.pipeline, self.c, self.current = cfg, pipeline, counters, current
        self.episodes, self.trackers, self.store, self.run_dir = episodes, trackers, store, run_dir
        self.nonce = secrets.token_hex(3)  # this process's rounds: a resumed run's rounds get new job ids

    async def evaluate(self, stop: asyncio.Event) -> dict[str, float]:
        """Greedy episodes of the current policy on held-out seeds; success rate with a 95% interval.

        Each of the ``eval_episodes`` seeds is one job (``JobPipeline.play_slots``: a job failed
        on infrastructure is played again, never scored). ``eval/episodes`` is how many ran;
        ``eval/episodes_asked`` how many were asked for (fewer ran only after a stop or a job lost
        for ``JOB_TIMEOUT_S``). eval.jsonl's line also counts them per task (``observe.task_counts``).
        """
        cfg, policy, tag = self.cfg, self.current(), f"{self.c.eval_rounds}-{self.nonce}"
        await self.pipeline.progress.enter(
            "evaluating", f"evaluating v{policy.version}", total=cfg.eval_episodes, unit="episodes"
        )
        done, replaced = await self.pipeline.play_slots(
            cfg.eval_episodes, lambda slot, attempt: eval_job(cfg, policy, slot, attempt, tag), stop
        )
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
        # Per task in the file only: the returned metrics are one number per name (metrics.jsonl, trackers).
        line = {"update": self.c.updates, "time": time.time(), **out, "tasks": eval_task_counts(episodes)}
        with (self.run_dir / "eval.jsonl").open("a") as fh:
            fh.write(json.dumps(line) + "\n")
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
