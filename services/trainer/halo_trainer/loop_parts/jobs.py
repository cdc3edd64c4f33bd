"""The jobs a run loop publishes: its training sequence and its evaluation rounds' slots."""

from __future__ import annotations

from halo.schemas import GroupMode, PolicyVersion, RolloutJob
from halo_trainer.config import EVAL_SEED_OFFSET, RunConfig


def train_job(cfg: RunConfig, policy: PolicyVersion, index: int) -> RolloutJob:
    """Job ``index`` of the run's training sequence: a group of ``num_generations`` on a task.

    Ids and seeds are deterministic: after a crash the same job maps to the same results.
    """
    job_id = f"{cfg.run_id}-j{index}"
    return RolloutJob(
        job_id=job_id,
        run_id=cfg.run_id,
        task_id=cfg.tasks[index % len(cfg.tasks)],
        group_id=job_id,
        group_mode=cfg.group_mode,
        group_size=cfg.num_generations,
        policy=policy,
        temperature=cfg.temperature,
        seed=cfg.seed * 100_003 + index,
        max_steps=cfg.max_steps,
        branch=cfg.branch,
        purpose="train",
        sampling=cfg.sampling,
    )


def eval_job(cfg: RunConfig, policy: PolicyVersion, slot: int, attempt: int, round_tag: str) -> RolloutJob:
    """Slot ``slot`` of an evaluation round: one greedy episode on a held-out seed.

    Ids are unique per round and attempt (``round_tag`` names the round and the loop process): an
    evaluation redone after a restart must really run again, not be skipped as a duplicate of one
    whose results were already consumed.
    """
    job_id = f"{cfg.run_id}-eval{round_tag}-{slot}" + (f"-r{attempt}" if attempt else "")
    return RolloutJob(
        job_id=job_id,
        run_id=cfg.run_id,
        task_id=cfg.tasks[slot % len(cfg.tasks)],
        group_id=job_id,
        group_mode=GroupMode.EPISODE,
        group_size=1,
        policy=policy,
        temperature=0.0,
        seed=EVAL_SEED_OFFSET + slot,
        max_steps=cfg.max_steps,
        branch=cfg.branch,
        purpose="eval",
        sampling=cfg.sampling,
    )
