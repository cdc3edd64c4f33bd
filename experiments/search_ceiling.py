"""Sampling, the Go-Explore ceiling and MCTS (with its ablations) at one env-step budget.

For each (task, seed), every arm starts from the same task and seed and may take E env steps
(``--env_step_budget``): independent sampled episodes (the trainer's episode code, one sample per
step, the search's horizon ``--max_depth``), Go-Explore (``halo_trainer.search_baselines.go_explore``)
and one MCTS search per ``--mcts`` arm, each with the run's ``mcts`` knobs plus its own overrides.
Reported per arm, with 95 % Wilson intervals: successes seen within the budget (pass@E with the
env's verifier) and successes the arm's returned path reproduces from a fresh start, kept apart;
and the exact McNemar test of each arm against sampling on the same (task, seed) pairs, on both.
Every row says whether the arm spent its whole budget unless it succeeded (``spent_or_succeeded``).

    python experiments/search_ceiling.py --task local.playground-13 --seeds 30 --env_step_budget 60 \
        --max_depth 10 --max_children 8 --mcts mcts: --mcts mcts_kept:rollout_nodes=milestone \
        --out ceiling.json

``--mcts NAME:knob=value,knob=value`` adds an MCTS arm (``NAME:`` alone: the knobs as given);
``--arms`` chooses among sampling, go_explore and the MCTS arms (default: all). Rows are printed as
they finish, so a run cut short still leaves its rows on stderr and in ``--out`` (written after each arm).
Started again with the same ``--out`` and settings, it keeps the rows there and runs only the
(task, seed, arm) it lacks, so a comparison of several hours can span several sittings; an
``--out`` written with other settings is refused, naming them.
Runs against the local stack (env, reward, vLLM as the usual HALO_TRAINER_* settings name them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from halo.cli.knob_options import add_knob_arguments
from halo.clients import EnvClient, RewardClient
from halo.schemas import PolicyVersion
from halo.schemas.search_settings import MCTSConfig
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import load_defaults, profile_for, sampling_for
from halo_trainer.observe.metrics import wilson_interval
from halo_trainer.rollout.play import Services
from halo_trainer.rollout.services import policy_client
from halo_trainer.search_baselines.arms import (
    episode_job,
    go_explore_arm,
    mcts_arm,
    paired,
    sampling_arm,
    spent_or_succeeded,
)


def parse_mcts_arm(text: str, base: dict) -> tuple[str, MCTSConfig]:
    """``NAME:knob=value,...`` as an arm name and its settings (``base`` overridden); a clear
    ValueError for a malformed one or a knob MCTSConfig does not take."""
    name, sep, rest = text.partition(":")
    if not sep or not name.isidentifier():
        raise ValueError(f"--mcts {text!r}: expected NAME:knob=value,... (NAME alone: NAME:)")
    overrides = {}
    for item in filter(None, rest.split(",")):
        knob, eq, value = item.partition("=")
        if not eq or knob not in MCTSConfig.model_fields:
            raise ValueError(f"--mcts {text!r}: {item!r} is not knob=value for an mcts knob")
        overrides[knob] = _value(value)
    try:
        return name, MCTSConfig.model_validate({**base, **overrides})
    except ValueError as exc:
        raise ValueError(f"--mcts {text!r}: {exc}") from None


def _value(text: str):
    """A knob's value as typed on the command line: a number, true/false or null, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def share(outcomes: list[bool]) -> dict:
    low, high = wilson_interval(sum(outcomes), len(outcomes))
    return {"successes": sum(outcomes), "n": len(outcomes), "ci_low": low, "ci_high": high}


def report(rows: list[dict], arms: list[str], budget: int) -> dict:
    out: dict = {"arms": {}, "paired": {}}
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        out["arms"][arm] = {
            "seen": share([r["seen"] for r in mine]),
            "reproduced": share([r["reproduced"] for r in mine]),
            "all_spent_or_succeeded": all(spent_or_succeeded(r, budget) for r in mine),
            "seconds": round(sum(r["seconds"] for r in mine), 1),
        }
        if arm != "sampling" and "sampling" in arms:
            out["paired"][arm] = {key: paired(rows, arm, "sampling", key) for key in ("seen", "reproduced")}
    return out


def settings_of(args: argparse.Namespace, searches: dict[str, MCTSConfig]) -> dict:
    """What makes two sittings one comparison: the budget, the horizon, the temperature, the searches."""
    return {
        "env_step_budget": args.env_step_budget,
        "max_depth": args.max_depth,
        "temperature": args.temperature,
        "searches": {k: v.model_dump(mode="json") for k, v in searches.items()},
    }


def rows_to_resume(out: str | None, settings: dict) -> list[dict]:
    """The rows an earlier sitting wrote to ``out`` with the same settings; none without a file."""
    if not out or not Path(out).exists():
        return []
    try:
        earlier = json.loads(Path(out).read_text())
    except ValueError as exc:
        raise ValueError(f"--out {out}: not a results file of this script ({exc})") from None
    differ = sorted(k for k in settings if earlier.get(k) != settings[k])
    if differ:
        raise ValueError(f"--out {out} was written with other settings ({', '.join(differ)}): use another --out")
    return list(earlier.get("rows", []))


async def compare(args: argparse.Namespace, searches: dict[str, MCTSConfig], arms: list[str]) -> dict:
    settings = TrainerSettings()
    run_id = f"ceiling-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(args.run_dir) if args.run_dir else settings.runs_dir / run_id
    sampling = sampling_for(load_defaults(settings.rl_config), profile_for(settings.target))
    budget = args.env_step_budget
    fixed = settings_of(args, searches)
    rows = rows_to_resume(args.out, fixed)
    done = {(r["task"], r["seed"], r["arm"]) for r in rows}
    result: dict = {}
    async with policy_client(settings) as policy:
        version = PolicyVersion(run_id=run_id, version=0, adapter_name=policy.base_model, created_at=time.time())

        async def current(_: str) -> PolicyVersion:
            return version

        env = EnvClient(settings.env_url, timeout_s=settings.request_timeout_s)
        reward = RewardClient(settings.reward_url, timeout_s=settings.request_timeout_s)
        svc = Services(env=env, policy=policy, reward=reward, current_policy=current)
        async with env.hold_lease(run_id):
            for task in args.task:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    job = episode_job(run_id, task, seed, version, args.temperature, args.max_depth, sampling)
                    for arm in arms:
                        if (task, seed, arm) in done:
                            continue
                        if arm == "sampling":
                            row = await sampling_arm(svc, job, budget)
                        elif arm == "go_explore":
                            row = await go_explore_arm(svc, job, budget, run_dir)
                        else:
                            row = await mcts_arm(svc, job, searches[arm], run_dir, arm)
                        row = {"task": task, "seed": seed, **row, "spent_or_succeeded": spent_or_succeeded(row, budget)}
                        rows.append(row)
                        print(json.dumps(row), file=sys.stderr, flush=True)
                        result = {**fixed, "rows": rows, **report(rows, arms, budget)}
                        if args.out:  # after every arm, whole or not at all: a sitting may end any time
                            tmp = Path(f"{args.out}.tmp")
                            tmp.write_text(json.dumps(result, indent=1))
                            tmp.replace(args.out)
        result = result or {**fixed, "rows": rows, **report(rows, arms, budget)}
        await env.aclose()
        await reward.aclose()
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", action="append", required=True, help="task id (repeatable)")
    p.add_argument("--seeds", type=int, default=30, help="seeds per task")
    p.add_argument("--first_seed", type=int, default=0)
    knobs = add_knob_arguments(p, ("mcts",))
    p.set_defaults(simulations=10_000, max_depth=10, critic="progress")
    p.add_argument("--mcts", action="append", default=[], help="an MCTS arm: NAME:knob=value,... (repeatable)")
    p.add_argument("--arms", help="comma-separated arms to run (default: sampling, go_explore and every --mcts arm)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--run_dir", help="where trees and snapshots go; default: <runs dir>/ceiling-<time>")
    p.add_argument("--out", help="write the results as JSON here (after every seed)")
    args = p.parse_args()
    if not args.env_step_budget:
        p.error("--env_step_budget is required: every arm gets the same budget")
    base = {name: getattr(args, name) for name in knobs if getattr(args, name) is not None}
    try:
        searches = dict(parse_mcts_arm(text, base) for text in args.mcts)
    except ValueError as exc:
        p.error(str(exc))
    arms = ["sampling", "go_explore", *searches]
    if args.arms:
        chosen = args.arms.split(",")
        unknown = [a for a in chosen if a not in arms]
        if unknown:
            p.error(f"--arms: unknown {unknown}; known: {arms}")
        arms = chosen
    try:
        rows_to_resume(args.out, settings_of(args, searches))
    except ValueError as exc:
        p.error(str(exc))
    result = asyncio.run(compare(args, searches, arms))
    for arm, r in result.get("arms", {}).items():
        seen, rep = r["seen"], r["reproduced"]
        print(
            f"{arm:<12} seen {seen['successes']}/{seen['n']} [{seen['ci_low']:.2f}, {seen['ci_high']:.2f}]"
            f"  reproduced {rep['successes']}/{rep['n']} [{rep['ci_low']:.2f}, {rep['ci_high']:.2f}]"
            f"  budget spent unless success: {r['all_spent_or_succeeded']}  {r['seconds']} s"
        )
    for arm, tests in result.get("paired", {}).items():
        for key, t in tests.items():
            print(
                f"{arm} vs sampling ({key}): {t[f'{arm}_only']} vs {t['sampling_only']}, exact McNemar p = {t['mcnemar_p']:.3g}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
