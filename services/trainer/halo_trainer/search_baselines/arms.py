"""The arms of a search comparison at one env-step budget, each on one task and
seed: independent sampled episodes, the Go-Explore ceiling, and an MCTS search with given settings.

Each arm gives one row with two successes kept apart:

- ``seen``: the arm met the task's success anywhere within its budget (a sampled episode, a
  Go-Explore step, or a search node or rollout judged by the env's validator): pass@budget with a
  verifier;
- ``reproduced``: the arm's returned path, replayed from the task's start in a fresh session,
  succeeds: what an agent that searched and then acted would get (a sampled episode's success is
  its own episode, so the two are equal there; a search's path is its most visited one).

and ``env_steps``, which ``spent_or_succeeded`` checks: every arm spends the whole budget unless it
succeeded.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from halo.schemas import EpisodeGroupJob, PolicyVersion, SamplingParams
from halo.schemas.search_settings import MCTSConfig
from halo_trainer.evaluation.matrix import replay_path
from halo_trainer.evaluation.stats import exact_mcnemar
from halo_trainer.mcts.search import search
from halo_trainer.rollout.play import Services, play_episode
from halo_trainer.search_baselines.go_explore import go_explore


def episode_job(
    run_id: str,
    task: str,
    seed: int,
    version: PolicyVersion,
    temperature: float,
    max_steps: int,
    sampling: SamplingParams,
) -> EpisodeGroupJob:
    """One comparison's job of ``task`` at ``seed``: one episode a group, the run's temperature and
    the search's horizon, so every arm plays the same job."""
    return EpisodeGroupJob(
        job_id=f"{run_id}-{task}-{seed}",
        run_id=run_id,
        task_id=task,
        group_id=f"{run_id}-{task}-{seed}",
        group_size=1,
        policy=version,
        temperature=temperature,
        seed=seed,
        max_steps=max_steps,
        sampling=sampling,
    )


async def sampling_arm(svc: Services, job: EpisodeGroupJob, budget: int, max_episodes: int = 1000) -> dict:
    """Sampled episodes until ``budget`` env steps are used or one succeeds; an episode that would
    pass the budget counts only as far as the budget (its success would be its last step, past it)."""
    started = time.perf_counter()
    used = episodes = 0
    success = False
    while used < budget and episodes < max_episodes and not success:
        transitions, summary = await play_episode(svc, job, episodes)
        steps = sum(t.action is not None for t in transitions)
        episodes += 1
        if used + steps > budget:
            used = budget
            break
        used += steps
        success = bool(summary.success)
    return _row("sampling", success, success, used, started, episodes=episodes)


async def go_explore_arm(svc: Services, job: EpisodeGroupJob, budget: int, run_dir: Path) -> dict:
    started = time.perf_counter()
    out = await go_explore(svc, job, budget, run_dir)
    reproduced = out.success and (await replay_path(svc.env, job, out.path))[0]
    return _row(
        "go_explore",
        out.success,
        reproduced,
        out.env_steps,
        started,
        progress=out.progress,
        reentries=out.reentries,
        reentry_mismatches=out.reentry_mismatches,
        path=[a.short() for a in out.path],
    )


async def mcts_arm(svc: Services, job: EpisodeGroupJob, cfg: MCTSConfig, run_dir: Path, name: str = "mcts") -> dict:
    """One search with ``cfg`` (its ``env_step_budget`` is the arm's budget); its returned path is the
    tree's best path (the most visited children), replayed as ``halo eval --search`` replays it."""
    started = time.perf_counter()
    searched = job.model_copy(update={"job_id": f"{job.job_id}-{name}"})
    found = await search(svc, searched, cfg, run_dir)
    tree = found.tree
    actions = [tree.node(i).action for i in tree.best_path()[1:]]
    actions = [a for a in actions if a is not None]  # an answer that did not parse ran nothing
    reproduced = (await replay_path(svc.env, job, actions))[0] if actions else False
    return _row(
        name,
        tree.success_found(),
        reproduced,
        tree.record.env_steps,
        started,
        nodes=len(tree.record.nodes),
        reentry_mismatches=found.reentry_mismatches,
        # Relative to the run folder: rows are committed as results, and a machine's paths are not.
        tree=os.path.relpath(found.path, run_dir),
    )


def _row(arm: str, seen: bool, reproduced: bool, env_steps: int, started: float, **extra) -> dict:
    return {
        "arm": arm,
        "seen": bool(seen),
        "reproduced": bool(reproduced),
        "env_steps": env_steps,
        "seconds": round(time.perf_counter() - started, 1),
        **extra,
    }


def spent_or_succeeded(row: dict, budget: int) -> bool:
    """The fairness rule: an arm returns with budget unspent only by a success."""
    return row["seen"] or row["env_steps"] == budget


def paired(rows: list[dict], arm: str, baseline: str, key: str) -> dict:
    """``arm`` against ``baseline`` on the same (task, seed) pairs by ``key`` (``seen`` or
    ``reproduced``): the discordant pairs and the exact McNemar test's two-sided p-value."""
    by_pair: dict[tuple[str, int], dict[str, bool]] = {}
    for r in rows:
        by_pair.setdefault((r["task"], r["seed"]), {})[r["arm"]] = r[key]
    both = [p for p in by_pair.values() if arm in p and baseline in p]
    arm_only = sum(p[arm] and not p[baseline] for p in both)
    baseline_only = sum(p[baseline] and not p[arm] for p in both)
    return {
        "pairs": len(both),
        f"{arm}_only": arm_only,
        f"{baseline}_only": baseline_only,
        "mcnemar_p": exact_mcnemar(arm_only, baseline_only),
    }
