"""The jobs a run loop publishes: its training sequence (rollouts or searches) and its evaluation
rounds' slots, each built as its kind (``halo.schemas.RolloutJob``)."""

from __future__ import annotations

from typing import Any

from halo.schemas import EpisodeGroupJob, EvalJob, GroupMode, PolicyVersion, SearchJob, StepGroupJob
from halo_trainer.config import EVAL_SEED_OFFSET, RunConfig


def _sequence(cfg: RunConfig, policy: PolicyVersion, index: int, task: str | None = None) -> dict[str, Any]:
    """What job ``index`` of the run's sequence is, whatever its kind: its id, task, seed and sampling.

    Ids and seeds are deterministic: after a crash the same job maps to the same results. ``task``:
    the one ``task_schedule`` drew for it; by default the tasks in turn.
    """
    job_id = f"{cfg.run_id}-j{index}"
    first_of_update = index - index % cfg.jobs_per_update
    return {
        "job_id": job_id,
        "run_id": cfg.run_id,
        "task_id": task if task is not None else cfg.tasks[index % len(cfg.tasks)],
        "group_id": job_id,
        "policy": policy,
        "temperature": cfg.temperature,
        "seed": cfg.seed * 100_003 + index,
        "sampling_seed": cfg.seed * 100_003 + first_of_update if cfg.common_random_numbers else None,
        "max_steps": cfg.max_steps,
        "sampling": cfg.sampling,
    }


def train_job(
    cfg: RunConfig, policy: PolicyVersion, index: int, task: str | None = None
) -> StepGroupJob | EpisodeGroupJob:
    """Job ``index`` of the run's training sequence: a group of ``num_generations`` on a task,
    a step group or an episode group as the run's ``group_mode`` says."""
    common = _sequence(cfg, policy, index, task)
    if cfg.group_mode is GroupMode.STEP:
        return StepGroupJob(**common, group_size=cfg.num_generations, branch=cfg.branch)
    return EpisodeGroupJob(**common, group_size=cfg.num_generations)


def search_job(cfg: RunConfig, policy: PolicyVersion, index: int) -> SearchJob:
    """A search of training job ``index``'s task and seed (the same id) with the run's search settings."""
    if cfg.mcts is None:
        raise ValueError(f"run {cfg.run_id}: a search job needs the run's mcts settings")
    return SearchJob(**{**_sequence(cfg, policy, index), "max_steps": cfg.mcts.max_depth}, mcts=cfg.mcts)


def eval_job(cfg: RunConfig, policy: PolicyVersion, slot: int, attempt: int, round_tag: str) -> EvalJob:
    """Slot ``slot`` of an evaluation round: one greedy episode on a held-out seed.

    Ids are unique per round and attempt (``round_tag`` names the round and the loop process): an
    evaluation redone after a restart must really run again, not be skipped as a duplicate of one
    whose results were already consumed.
    """
    job_id = f"{cfg.run_id}-eval{round_tag}-{slot}" + (f"-r{attempt}" if attempt else "")
    return EvalJob(
        job_id=job_id,
        run_id=cfg.run_id,
        task_id=cfg.tasks[slot % len(cfg.tasks)],
        group_id=job_id,
        policy=policy,
        seed=EVAL_SEED_OFFSET + slot,
        max_steps=cfg.max_steps,
        sampling=cfg.sampling,
    )
