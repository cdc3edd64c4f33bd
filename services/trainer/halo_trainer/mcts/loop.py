"""The online MCTS + step-level DPO loop of one run (Agent Q): searches in, DPO updates out, adapters into vLLM.

    restore the latest checkpoint (adapter, optimizer, RNG, counters, un-acked results)
    serve the current adapter; evaluate the starting policy
    while searches remain and nobody asked to stop:
        until `jobs_per_update` search results are in:                   (Redis results stream)
            keep that many search jobs in flight for the workers          (Redis job stream)
            each worker runs halo_trainer.mcts.search on its job's task and seed with the run's
                settings, writes the tree to <run>/trees/<job>.json and publishes where it is
            a search that failed on infrastructure is replaced, not counted (outages as GRPO's)
            drop duplicate results
        load the trees; preference pairs at every explored node (theta)  (mcts.tree)
        reference log-probs of both actions of every pair: the adapter as the iteration began,
            or the base model (adapter disabled)
        DPO step(s) on the pairs                                          (halo_trainer.learner.dpo)
        if a step was taken: save adapter v(k+1), load it into vLLM as `<run>-v<k+1>`, make it
            current for new searches
        every `eval_every` iterations: greedy episodes on held-out seeds
        every `checkpoint_every` iterations: checkpoint, then acknowledge the results it contains

How it differs from Agent Q (arXiv 2408.07199):
- one search is one job, played by a rollout worker on exact forks of the browser (re-entry by
  snapshot; a page that differs on re-entry is counted), and counts as one of the run's ``episodes``;
- the critic is the policy's own model ranking the candidates (``critic: self``), an
  OpenAI-compatible endpoint, or, where no model can critique (the embedded tiny model), the
  reward service's milestone progress; Q mixes it with the backed-up value (Eq. 10, ``alpha``);
- pairs are built only between explored children, at every explored node (``theta``);
- the DPO reference is the adapter as the iteration began (``reference: iteration``) or the base
  model, and an optional NLL term on the chosen action (``rpo_alpha``);
- the job streams, outages, publishing, evaluation and exactly-once checkpoints are the same parts
  the GRPO loop is built from (``halo_trainer.loop_parts``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict

from halo.schemas import PolicyVersion, RolloutResult, SearchJob
from halo.schemas.search_settings import Reference
from halo_trainer.config import RunConfig
from halo_trainer.learner.batching import advantages_of
from halo_trainer.loop_parts.jobs import search_job
from halo_trainer.loop_parts.parts import LoopStatus, RunParts
from halo_trainer.mcts.pairs import TreePair, pair_batches, tree_pairs
from halo_trainer.mcts.tree import load_tree
from halo_trainer.observe.task_counts import TrainTaskLog, count_by_task

logger = logging.getLogger("halo.trainer.mcts")

SUMMED = ("env_steps", "reentries", "reentry_mismatches", "infra_errors", "critic_failures")  # the rest are means


class MctsLoop:
    def __init__(self, cfg: RunConfig, **services) -> None:
        if cfg.mcts is None:
            raise ValueError(f"run {cfg.run_id}: algorithm {cfg.algorithm.value!r} has no mcts settings")
        self.cfg, self.search = cfg, cfg.mcts
        # its evaluation episodes are logged with the advantages a GRPO run would show (groups of one: 0)
        advantages = advantages_of(cfg.group_mode, cfg.advantage)
        self.parts = RunParts(cfg, train_job=self._search_job, episodes_per_job=1, advantages=advantages, **services)
        self.c, self.learner = self.parts.c, self.parts.learner
        self.task_log = TrainTaskLog(self.parts.run_dir / "train_tasks.jsonl")

    async def run(self, stop: asyncio.Event) -> str:
        """Train until ``episodes`` searches are used ("finished") or ``stop`` is set ("stopped")."""
        parts = self.parts
        await parts.start(stop)
        async for results in parts.batches(stop):
            started = time.perf_counter()
            metrics = await self._learn_from([d.message for d in results])  # trees -> pairs -> DPO
            metrics |= parts.count_update(results, len(results), started)
            if metrics.get("dpo/pairs", 0.0) > 0:
                await parts.publisher.publish_next()
            await parts.close_update(metrics)
        return await parts.finish(stop)

    def _search_job(self, policy: PolicyVersion, index: int) -> SearchJob:
        """A search of GRPO's job ``index`` (same deterministic id, task and seed)."""
        return search_job(self.cfg, policy, index)

    async def _learn_from(self, messages: list[RolloutResult]) -> dict[str, float]:
        """The iteration's trees: search metrics, preference pairs, and a DPO step when there are pairs."""
        for m in messages:
            if m.search is None:
                raise ValueError(f"result of job {m.job_id} carries no search: not a search job's result")
        trees = await asyncio.to_thread(lambda: [load_tree(m.search.tree_file) for m in messages])
        metrics = search_metrics(messages)
        found = [
            (t.record.task_id, m.search.metrics.get("success_found", 0.0) > 0)
            for m, t in zip(messages, trees, strict=True)
        ]
        self.task_log.write(self.c.updates + 1, count_by_task(found))  # the update these searches make
        pairs = tree_pairs(trees, self.search.theta)
        metrics["dpo/pairs"] = float(len(pairs))
        if pairs:
            metrics |= await asyncio.to_thread(self._dpo, pairs)
        else:
            logger.info("iteration %d: no preference pairs in %d trees; no DPO step", self.c.updates + 1, len(trees))
        return metrics

    def _dpo(self, pairs: list[TreePair]) -> dict[str, float]:
        chosen, rejected = pair_batches(pairs, self.parts.processor, self.parts.store, self.learner.vocab_size)
        # The reference is fixed for the whole iteration: computed before its first step.
        current = self.search.reference is Reference.ITERATION
        ref_chosen = self.learner.logprobs(chosen, adapter=current)
        ref_rejected = self.learner.logprobs(rejected, adapter=current)
        metrics: dict[str, float] = {}
        for _ in range(self.cfg.epochs_per_batch):
            metrics = self.learner.dpo_update(
                chosen, rejected, ref_chosen, ref_rejected, beta=self.search.beta, rpo_alpha=self.search.rpo_alpha
            )
        return metrics

    def status(self) -> LoopStatus:
        return self.parts.status()

    async def release_weights(self) -> None:
        await self.parts.publisher.release()


def search_metrics(messages: list[RolloutResult]) -> dict[str, float]:
    """``mcts/*`` over an iteration's searches: env steps, re-entries and failures summed; nodes,
    depth, success found (a share), best-path length and critic agreement averaged."""
    values: dict[str, list[float]] = defaultdict(list)
    for m in messages:
        if m.search is not None:
            for key, value in m.search.metrics.items():
                values[key].append(value)
    out = {f"mcts/{k}": (sum(v) if k in SUMMED else sum(v) / len(v)) for k, v in values.items()}
    out["mcts/searches"] = float(len(messages))
    return out
