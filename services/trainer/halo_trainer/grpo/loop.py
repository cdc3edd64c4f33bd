"""The online GRPO loop of one run: rollouts in, LoRA updates out, new adapters into vLLM.

    restore the latest checkpoint (adapter, optimizer, RNG, counters, un-acked results)
    serve the current adapter; evaluate the starting policy
    while episodes remain and nobody asked to stop:
        collect `jobs_per_update` results, keeping that many jobs in flight    (loop_parts.pipeline)
            (each job's task in turn, or drawn where updates find signal      (grpo.task_schedule))
            plus `prefetch_updates` updates' worth more, so workers sample while the learner
            updates; failed jobs are replaced, outages waited out, duplicates dropped
        keep the groups sampled at most `max_staleness` versions ago
        advantages per group (`seed_contrast`: less what an action earned on every seed alike);
            `epochs_per_batch` learner steps                                   (halo_trainer.learner.learner)
        every `sync_every` updates: publish version k+1 into vLLM               (loop_parts.publisher)
        every `eval_every` updates: greedy episodes on held-out seeds          (loop_parts.evaluation)
        every `checkpoint_every` updates: checkpoint, then acknowledge the results it contains

How it differs from textbook GRPO (DeepSeekMath):
- the loss is ``dr_grpo`` by default (Dr. GRPO: A = r - mean r, no std division, no length
  normalisation), with asymmetric clipping and an optional KL to the reference (``objective``);
- groups are either whole episodes on one task and seed, or the candidate actions at one shared
  browser state (``group_mode: step``, exact forks of the page), each scored by dense shaped reward;
- sampling and learning overlap: transitions carry the version that sampled them, those too old
  are dropped, the rest are corrected by the importance ratio against vLLM's behaviour
  log-probs, truncated at ``tis_cap``; a gap between the learner's and the sampler's log-probs
  above ``behaviour_gap_alarm`` is reported (``metrics.GapAlarm``);
- every result is used exactly once across crashes (``loop_parts.durability``).
"""

from __future__ import annotations

import asyncio
import time

from halo.schemas import GroupMode, RolloutResult, Transition
from halo_trainer.config import RunConfig
from halo_trainer.grpo.groups import select_groups
from halo_trainer.grpo.seed_contrast import contrast_across_seeds
from halo_trainer.grpo.task_schedule import task_of_job, update_signal
from halo_trainer.learner.batching import advantages, advantages_of, learner_batch
from halo_trainer.loop_parts.jobs import train_job
from halo_trainer.loop_parts.parts import LoopStatus, RunParts
from halo_trainer.observe.metrics import GapAlarm, rollout_metrics
from halo_trainer.observe.task_counts import TrainTaskLog, train_task_counts


class GrpoLoop:
    def __init__(self, cfg: RunConfig, **services) -> None:
        self.cfg = cfg
        per_job = 1 if cfg.group_mode is GroupMode.STEP else cfg.num_generations  # step groups: one episode
        self.parts = RunParts(
            cfg,
            train_job=self._train_job,
            episodes_per_job=per_job,
            advantages=advantages_of(cfg.group_mode, cfg.advantage),
            **services,
        )
        self.c, self.learner = self.parts.c, self.parts.learner
        self.gap_alarm = GapAlarm(cfg.behaviour_gap_alarm, cfg.run_id)
        self.task_log = TrainTaskLog(self.parts.run_dir / "train_tasks.jsonl")

    def _train_job(self, policy, index: int):
        return train_job(self.cfg, policy, index, task_of_job(self.cfg, index, self.c.task_signal))

    async def run(self, stop: asyncio.Event) -> str:
        """Train until the episode budget is spent ("finished") or ``stop`` is set ("stopped")."""
        cfg, parts = self.cfg, self.parts
        await parts.start(stop)
        async for results in parts.batches(stop):
            started = time.perf_counter()
            messages = [d.message for d in results]
            metrics = await self._learn_from(messages)
            metrics |= parts.count_update(results, sum(len(r.episodes) for r in messages), started)
            self.task_log.write(self.c.updates, train_task_counts(messages))
            if self.c.updates % cfg.sync_every == 0:
                await parts.publisher.publish_next()
            await parts.close_update(metrics)
        return await parts.finish(stop)

    async def _learn_from(self, messages: list[RolloutResult]) -> dict[str, float]:
        """Advantages per group of fresh transitions, then the learner's step(s)."""
        transitions = [t for r in messages for t in r.transitions]
        selection = select_groups(transitions, self.c.version, self.cfg.max_staleness, self.cfg.group_mode)
        metrics = rollout_metrics(messages, selection, self.c.version)
        kept = [t for g in selection.groups for t in g]
        if kept:
            per_group = advantages(selection.groups, self.cfg.group_mode, self.cfg.advantage)
            self.c.task_signal = update_signal(self.c.task_signal, selection.groups, per_group)
            if self.cfg.seed_contrast:
                per_group, matched = contrast_across_seeds(selection.groups, per_group, self.cfg.seed_contrast)
                metrics["train/seed_contrasted_fraction"] = matched / len(kept)
            adv = [a for g in per_group for a in g]
            metrics |= await asyncio.to_thread(self._learn, kept, adv)
            metrics |= self.gap_alarm.check(metrics)
        return metrics

    def _learn(self, transitions: list[Transition], adv: list[float]) -> dict[str, float]:
        batch = learner_batch(
            transitions,
            adv,
            self.parts.processor,
            self.parts.store,
            use_behaviour_logprobs=self.cfg.use_behaviour_logprobs,
            vocab_size=self.learner.vocab_size,
        )
        metrics: dict[str, float] = {}
        for _ in range(self.cfg.epochs_per_batch):
            metrics = self.learner.update(batch)
        return metrics

    def status(self) -> LoopStatus:
        return self.parts.status()

    async def release_weights(self) -> None:
        await self.parts.publisher.release()
