"""Search versus sampling at an equal env-step budget.

For each (task, seed): one MCTS search (``halo_trainer.mcts.search``) uses E env steps; then
independent sampled episodes of the same task and seed (one sample per step, the same temperature
and horizon, the trainer's own episode code) are played until they have used E env steps. Reported:
the share of (task, seed) on which each found a success, with 95% Wilson intervals, and the exact
McNemar test on the paired outcomes (the same task and seed in both arms).

    python experiments/search_vs_sampling.py --task local.playground-7 --task local.playground-9 --seeds 5
    python experiments/search_vs_sampling.py --domain playground --seeds 3 --simulations 10 --out svs.json
    python experiments/search_vs_sampling.py --task local.playground-11 --seeds 30 --simulations 1000 \
        --env_step_budget 48 --max_children 8 --out svs.json     # every search and its sampling: 48 env steps

The search's settings are the run's ``mcts`` knobs (``--widening``, ``--env_step_budget``, ...).

Runs against the local stack (env, reward, vLLM as the usual HALO_TRAINER_* settings name them),
with the base model. An env step is one executed action: the search's restores, forks and snapshots
are not counted (they re-enter states, which sampling never needs), and an answer that does not
parse takes no env step in either method. A sampled episode that would pass the budget counts only
if it succeeded within it (a success is an episode's last step, so it does not).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from halo.cli.knob_options import add_knob_arguments
from halo.clients import EnvClient, RewardClient
from halo.schemas import EpisodeGroupJob, PolicyVersion
from halo.schemas.search_settings import MCTSConfig
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import load_defaults, profile_for, sampling_for
from halo_trainer.evaluation.stats import exact_mcnemar
from halo_trainer.mcts.search import search
from halo_trainer.observe.metrics import wilson_interval
from halo_trainer.rollout.play import Services, play_episode
from halo_trainer.rollout.services import policy_client
from halo_trainer.search_baselines.arms import episode_job, sampling_arm

PILOT_SEED = 100_000  # the pilot's seeds: none of the main run's


async def measure(svc: Services, job: EpisodeGroupJob, cfg: MCTSConfig, run_dir: Path, max_episodes: int) -> dict:
    """One (task, seed): a search, then sampled episodes within the env steps it used."""
    started = time.perf_counter()
    found = await search(svc, job, cfg, run_dir)
    searched_s = time.perf_counter() - started
    budget = found.tree.record.env_steps
    sampled_job = job.model_copy(update={"job_id": f"{job.job_id}-sampled"})
    started = time.perf_counter()
    sampled = await sampling_arm(svc, sampled_job, budget, max_episodes)
    return {
        "task": job.task_id,
        "seed": job.seed,
        "env_steps": budget,
        # The tree's own verdict: a rollout that succeeded counts though its steps are not nodes.
        "mcts_success": found.tree.success_found(),
        "mcts_nodes": len(found.tree.record.nodes),
        "mcts_s": round(searched_s, 1),
        "reentry_mismatches": found.reentry_mismatches,
        "sampled_success": sampled["seen"],
        "sampled_episodes": sampled["episodes"],
        "sampled_env_steps": sampled["env_steps"],
        "sampled_s": round(time.perf_counter() - started, 1),
        "tree": os.path.relpath(found.path, run_dir),
    }


def milestone_rates(episodes: list[list[list[str]]]) -> tuple[list[str], dict[str, int], dict[str, int]]:
    """Per-step hit rates of a task's milestones from sampled episodes, each a list of its executed
    steps' newly paid milestones: (the milestones in the order episodes first reached them, hits,
    tries). A step tries for the next milestone its episode has not reached yet, in that order;
    the order is read from all episodes before any step is counted, so the steps before the first
    hit count as tries too (learning the order on the way left them out: local.playground-11's one
    hit in some 166 steps read as 1 in 85, 1.2 % per step instead of about 0.6 %)."""
    order: list[str] = []
    for steps in episodes:
        for new in steps:
            order.extend(m for m in new if m not in order)
    hits = dict.fromkeys(order, 0)
    tries = dict.fromkeys(order, 0)
    for steps in episodes:
        reached: set[str] = set()
        for new in steps:
            following = next((m for m in order if m not in reached), None)
            if following is not None:
                tries[following] += 1
                hits[following] += following in new
            reached.update(new)
    return order, hits, tries


async def pilot_task(svc: Services, job: EpisodeGroupJob, episodes: int, budget: int) -> dict:
    """The base policy's per-step hit rates on one task: ``episodes`` sampled episodes (seeds apart
    from the main run's), each milestone's hit rate per step taken while it was the next one
    (``milestone_rates``), the episode success rate, and what these predict for sampling within
    ``budget`` env steps."""
    played: list[list[list[str]]] = []
    successes = 0
    for i in range(episodes):
        seeded = job.model_copy(update={"job_id": f"{job.job_id}-p{i}", "seed": PILOT_SEED + i})
        transitions, summary = await play_episode(svc, seeded, 0)
        played.append(
            [list(t.reward.milestones) if t.reward is not None else [] for t in transitions if t.action is not None]
        )
        successes += bool(summary.success)
    order, hits, tries = milestone_rates(played)
    steps_total = sum(len(steps) for steps in played)
    per_episode = successes / episodes
    mean_len = steps_total / episodes if episodes else 0.0
    tries_at_budget = budget / mean_len if mean_len else 0.0
    return {
        "task": job.task_id,
        "episodes": episodes,
        "episode_success": per_episode,
        "episode_success_ci": wilson_interval(successes, episodes),
        "mean_env_steps": mean_len,
        "milestones": {m: {"hits": hits[m], "steps": tries[m]} for m in order},
        # independent episodes within the budget: 1 - (1 - p)^(E / mean length)
        "predicted_sampling_success_at_budget": 1 - (1 - per_episode) ** tries_at_budget,
    }


def paired(rows: list[dict]) -> dict:
    """The two arms on the same (task, seed) pairs: the discordant pairs (search alone succeeded,
    sampling alone succeeded) and the exact McNemar test's two-sided p-value."""
    search_only = sum(r["mcts_success"] and not r["sampled_success"] for r in rows)
    sampling_only = sum(r["sampled_success"] and not r["mcts_success"] for r in rows)
    return {
        "search_only": search_only,
        "sampling_only": sampling_only,
        "mcnemar_p": exact_mcnemar(search_only, sampling_only),
    }


def share(outcomes: list[bool]) -> dict:
    low, high = wilson_interval(sum(outcomes), len(outcomes))
    return {"successes": sum(outcomes), "n": len(outcomes), "ci_low": low, "ci_high": high}


async def compare(args: argparse.Namespace, pilot: int = 0) -> dict:
    settings = TrainerSettings()
    run_id = f"svs-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(args.run_dir) if args.run_dir else settings.runs_dir / run_id
    sampling = sampling_for(load_defaults(settings.rl_config), profile_for(settings.target))
    given = {name: getattr(args, name) for name in args.knobs if getattr(args, name) is not None}
    cfg = MCTSConfig(**given)
    rows = []
    async with policy_client(settings) as policy:
        version = PolicyVersion(run_id=run_id, version=0, adapter_name=policy.base_model, created_at=time.time())

        async def current(_: str) -> PolicyVersion:
            return version

        env = EnvClient(settings.env_url, timeout_s=settings.request_timeout_s)
        reward = RewardClient(settings.reward_url, timeout_s=settings.request_timeout_s)
        svc = Services(env=env, policy=policy, reward=reward, current_policy=current)
        tasks = args.task or [t.id for t in await env.tasks(args.domain)]
        async with env.hold_lease(run_id):
            pilot_rows = []
            for task in tasks if pilot else []:
                job = episode_job(run_id, task, 0, version, args.temperature, args.max_depth, sampling)
                pilot_rows.append(await pilot_task(svc, job, pilot, cfg.env_step_budget))
                print(json.dumps(pilot_rows[-1]), file=sys.stderr, flush=True)
            for task in tasks if not pilot else []:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    job = episode_job(run_id, task, seed, version, args.temperature, args.max_depth, sampling)
                    row = await measure(svc, job, cfg, run_dir, args.max_episodes)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
        await env.aclose()
        await reward.aclose()
    if pilot:
        return {"settings": cfg.model_dump(mode="json"), "temperature": args.temperature, "pilot": pilot_rows}
    return {
        "settings": cfg.model_dump(mode="json"),
        "temperature": args.temperature,
        "sampling": sampling.model_dump(mode="json"),
        "rows": rows,
        "mcts": share([r["mcts_success"] for r in rows]),
        "sampled": share([r["sampled_success"] for r in rows]),
        "paired": paired(rows),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--domain", default="playground")
    p.add_argument("--task", action="append", help="task id (repeatable); default: every task of the domain")
    p.add_argument("--seeds", type=int, default=3, help="seeds per task")
    p.add_argument("--first_seed", type=int, default=0)
    # The search's settings are the run's mcts knobs (docs/knobs.md); this measurement's own choices:
    # a short search, a horizon of 6, and the critic the tiny random-weight model allows.
    knobs = add_knob_arguments(p, ("mcts",))
    p.set_defaults(knobs=knobs, simulations=10, max_depth=6, critic="progress")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max_episodes", type=int, default=200, help="sampled episodes per (task, seed) at most")
    p.add_argument("--run_dir", help="where trees and snapshots go; default: <runs dir>/svs-<time>")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument(
        "--pilot",
        type=int,
        default=0,
        help="play this many sampled episodes per task (seeds from 100000) and report the base policy's "
        "per-step milestone hit rates and the sampling arm's predicted success at --env_step_budget; no search",
    )
    args = p.parse_args()
    if args.pilot:
        report = asyncio.run(compare(args, pilot=args.pilot))
        for row in report["pilot"]:
            print(json.dumps(row))
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1))
        return 0
    report = asyncio.run(compare(args))
    for name in ("mcts", "sampled"):
        r = report[name]
        print(f"{name:<8} {r['successes']}/{r['n']}  95% [{r['ci_low']:.2f}, {r['ci_high']:.2f}]")
    pair = report["paired"]
    print(
        f"paired   search alone {pair['search_only']}, sampling alone {pair['sampling_only']}, "
        f"exact McNemar p = {pair['mcnemar_p']:.3g}"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
