"""The evaluation matrix: agent modes side by side on the same sampled tasks and seeds.

    python -m halo_trainer.evaluation --modes qwen3vl_base qwen3vl_grpo --domain playground
    python -m halo_trainer.evaluation --modes qwen3vl_base gpt4o_baseline --subset shopping \\
        --task-registry configs/real_v2_task_registry.json --sample-size 30 --seed 42
    python -m halo_trainer.evaluation --modes qwen3vl_base --suite real-v2-offline --episodes-per-task 3

1. The task pool (``pool.py``): ``--tasks``; ``--suite real-v2-offline``: every REAL v2 task the
   offline clones support (``real-offline.*``), with the others and their reasons in
   ``left_out.json``; else the registry snapshot's tasks (``--task-registry``) of the sites
   ``--domain`` / ``--subset`` name, else the env service's tasks of those sites. The env probes
   each site; tasks whose site does not answer are left out, and when none of a registry's hosted
   tasks answers (offline) the local clones of the same sites stand in. The output says so.
2. ``--sample-size`` tasks drawn with ``random.Random(seed)`` from the sorted pool, each played
   ``--episodes-per-task`` times with seeds derived from ``--seed``: every mode sees the same
   (task, seed) pairs.
3. Each episode is one greedy episode of the trainer's own rollout code (``run_job`` of an
   ``EvalJob``). An episode that fails on infrastructure is replayed (``--infra-retries``); the failures
   are counted apart and never scored.
4. Results go to ``<data_dir>/eval/<id>/``: ``plan.json``, ``episodes.jsonl`` (one line per
   finished episode, appended as it ends), ``results.json`` (pass@1 and pass^k per mode and
   site), ``table.md``, ``chart.png`` and ``agisdk_results.json`` (per mode, one record per task
   in the shape agisdk's harness returns, REAL's ids, the first seed's episode). The id
   is a digest of the plan, so the same command after an interruption resumes where it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from halo.clients import EnvClient, RewardClient
from halo.modes import MODES, ModeError, get_mode
from halo.schemas import Action, EvalJob, RolloutResult, RunSpec, SamplingParams, SearchJob
from halo.schemas.search_settings import MCTSConfig
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo.transport import CallError
from halo_trainer.config import load_defaults, profile_for, resolve, sampling_for
from halo_trainer.evaluation import report as eval_report
from halo_trainer.evaluation.pool import (
    REAL_OFFLINE,
    SUBSETS,
    SUITES,
    EvalError,
    episode_seeds,
    sample_tasks,
    site_of,
    suite_pool,
    task_pool,
)
from halo_trainer.evaluation.stats import mode_summary, paired_test
from halo_trainer.mcts.search import search
from halo_trainer.rollout.mode_policy import ModePolicy, open_mode, served_name
from halo_trainer.rollout.play import Services, run_job


def plan_id(plan: dict) -> str:
    return hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()[:12]


def _job(eval_id: str, mp: ModePolicy, task: str, seed: int, attempt: int, args, sampling: SamplingParams) -> EvalJob:
    job_id = f"{eval_id}-{mp.mode.name}-{task}-{seed}-a{attempt}"
    return EvalJob(
        job_id=job_id,
        run_id=f"eval-{eval_id}",
        task_id=task,
        group_id=job_id,
        policy=mp.version,
        seed=seed,
        max_steps=args.max_steps,
        sampling=sampling,
    )


def _record(mode: str, task: str, seed: int, result: RolloutResult | None, infra_failures: int) -> dict:
    record = {"mode": mode, "task": task, "seed": seed, "site": site_of(task), "infra_failures": infra_failures}
    if result is None:
        return record | {"scored": False, "success": None, "return": None, "steps": 0, "valid_actions": 0}
    ep = result.episodes[0]
    return record | {
        "scored": True,
        "success": bool(ep.success),
        "return": ep.episode_return,
        "steps": ep.steps,
        "valid_actions": ep.valid_actions,
        "actions": ep.actions,
        "screenshots": ep.screenshots,  # content hashes in the env's store: the viewer's filmstrip
    }


def _search_job(
    eval_id: str,
    mp: ModePolicy,
    task: str,
    seed: int,
    attempt: int,
    cfg: MCTSConfig,
    temperature: float,
    sampling: SamplingParams,
) -> SearchJob:
    job_id = f"{eval_id}-{mp.mode.name}{SEARCH}-{task}-{seed}-a{attempt}"
    return SearchJob(
        job_id=job_id.replace("+", "-"),
        run_id=f"eval-{eval_id}",
        task_id=task,
        group_id=job_id.replace("+", "-"),
        policy=mp.version,
        temperature=temperature,  # a search explores at the runs' sampling temperature
        seed=seed,
        max_steps=cfg.max_depth,
        sampling=sampling,
        mcts=cfg,
    )


def _write(path: Path, record: dict) -> dict:
    with path.open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    return record


def _outcome(record: dict) -> str:
    return "infra (unscored)" if not record["scored"] else ("success" if record["success"] else "fail")


def _infra(result: RolloutResult) -> bool:
    return bool(result.infra_error) or not result.episodes or any(e.infra_error for e in result.episodes)


async def play(svc: Services, job_for, retries: int) -> tuple[RolloutResult | None, int]:
    """One scored episode, replaying it after infrastructure failures; (None, n) when all failed."""
    for attempt in range(retries + 1):
        result = await run_job(svc, job_for(attempt))
        if not _infra(result):
            return result, attempt
    return None, retries + 1


SEARCH = "+search"  # a vLLM mode searching at test time: "<mode>+search"


def search_settings(args: argparse.Namespace, defaults: dict, profile: str | None) -> tuple[MCTSConfig, float]:
    """A run's search settings and sampling temperature as ``resolve`` gives them (the knobs, the
    run defaults file, the target's profile), bounded by the evaluation's env-step budget and horizon."""
    run = resolve(RunSpec(domain="eval", algorithm="mcts"), "eval", ["eval"], defaults, profile)
    bounded = {"env_step_budget": args.search_budget, "simulations": 10_000, "max_depth": args.max_steps}
    return MCTSConfig(**run.mcts.model_dump() | bounded), run.temperature


async def replay_path(env: EnvClient, job: SearchJob, actions: Sequence[Action]) -> tuple[bool, int]:
    """``actions`` played from the task's start (its seed) in a fresh session: whether the task
    succeeded, as an episode's last step or, when the path ends before the episode does, the task's
    verdict there; and the env steps taken. The session is closed."""
    reset = await env.reset(job.task_id, seed=job.seed, max_steps=job.max_steps, run_id=job.run_id)
    session, steps = reset.observation.session_id, 0
    try:
        for action in actions:
            result = await env.step(session, action)
            steps += 1
            if result.terminated or result.truncated:
                return bool(result.info.get("task_success")), steps
        return bool((await env.validate(session)).success), steps
    finally:
        await env.close(session)


async def play_search(
    svc: Services, job_for: Callable[[int], SearchJob], folder: Path, retries: int
) -> tuple[dict | None, int]:
    """One test-time search, run again after an infrastructure failure: (its outcome, failures).

    Its success is the reproduced path's: the path the search returns (``best_path``, the most
    visited children) replayed from the task's start in a fresh session, as an agent that searched
    and then acts would play it. Whether the search reached a success anywhere (a tree node or a
    rollout, judged by the env's validator) is kept apart as ``oracle_success_found``: that is
    pass@budget with a verifier, not one agent's episode."""
    for attempt in range(retries + 1):
        job = job_for(attempt)
        try:
            found = await search(svc, job, job.mcts, folder)
            path = [found.tree.node(i) for i in found.tree.best_path()[1:]]
            actions = [n.action for n in path if n.action is not None]  # an answer that did not parse ran nothing
            reproduced, replay_steps = await replay_path(svc.env, job, actions)
        except CallError:
            continue
        steps = found.tree.record.env_steps
        outcome = {
            "success": reproduced,
            "oracle_success_found": found.tree.success_found(),
            "return": 0.0,  # a search has no single episode's return
            "steps": steps,  # its cost: every env step it took, expansions and rollouts
            "valid_actions": steps,
            "replay_steps": replay_steps,  # the returned path's replay, not counted in steps
            "actions": [n.action_key for n in path],
        }
        return outcome, attempt
    return None, retries + 1


def summarise(eval_id: str, plan: dict, records: list[dict]) -> dict:
    by_mode = {m: [r for r in records if r["mode"] == m] for m in plan["modes"]}
    return {
        "eval_id": eval_id,
        "plan": plan,
        "modes": {m: mode_summary(rs) for m, rs in by_mode.items()},
        "paired": [
            {"a": a, "b": b, **paired_test(by_mode[a], by_mode[b])} for a, b in itertools.combinations(plan["modes"], 2)
        ],
    }


def agisdk_results(plan: dict, records: list[dict], served: dict[str, str]) -> dict[str, dict]:
    """Per mode, what agisdk's harness ``run()`` returns: task name -> record with ``cum_reward`` (1 on
    success), ``n_steps``, ``elapsed_time`` and ``err_msg``; REAL's ids (``v2.<site>-<n>``) for REAL
    tasks. One record per task, as the harness keeps: the episode of the plan's first seed."""
    first = plan["seeds"][0]
    out: dict[str, dict] = {}
    for mode in plan["modes"]:
        rows = {}
        for r in records:
            if r["mode"] != mode or r["seed"] != first:
                continue
            name = "v2." + r["task"].removeprefix(REAL_OFFLINE) if r["task"].startswith(REAL_OFFLINE) else r["task"]
            rows[name] = {
                "task_name": name,
                "agent_type": mode,
                "model_name": served.get(mode.removesuffix(SEARCH), mode),
                "max_steps": plan["max_steps"],
                "cum_reward": 1 if r["success"] else 0,
                "n_steps": r["steps"],
                "elapsed_time": r.get("elapsed_s"),
                "err_msg": None if r["scored"] else f"infrastructure failure ({r['infra_failures']} attempts)",
                "seed": r["seed"],
            }
        out[mode] = dict(sorted(rows.items()))
    return out


def write_outputs(folder: Path, results: dict, records: list[dict], served: dict[str, str]) -> None:
    (folder / "results.json").write_text(json.dumps(results, indent=1))
    (folder / "table.md").write_text(eval_report.markdown(results))
    (folder / "agisdk_results.json").write_text(json.dumps(agisdk_results(results["plan"], records, served), indent=1))
    eval_report.chart(results, folder / "chart.png")


def read_records(path: Path) -> list[dict]:
    """Finished episodes. A line cut short by an interruption is dropped (that episode is replayed)
    and the file rewritten without it, so the next line is not appended to the broken one."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    kept = path.with_name(f".{path.name}.kept")
    kept.write_text("".join(json.dumps(r) + "\n" for r in records))
    kept.replace(path)
    return records


async def evaluate(args: argparse.Namespace, say: Callable[[str], None]) -> tuple[Path, dict]:
    trainer, settings = TrainerSettings(), EvalSettings()
    modes = list(dict.fromkeys(args.modes))
    served = {m: served_name(get_mode(m), trainer, settings) for m in modes}  # refuses unusable modes first
    defaults, profile = load_defaults(trainer.rl_config), profile_for(trainer.target)
    sampling = sampling_for(defaults, profile)
    searching = [m for m in modes if args.search and get_mode(m).backend == "vllm"]
    search_cfg, search_temperature = search_settings(args, defaults, profile) if searching else (None, 0.0)
    env = EnvClient(trainer.env_url, timeout_s=trainer.request_timeout_s)
    reward = RewardClient(trainer.reward_url, timeout_s=trainer.request_timeout_s)
    opened: list[ModePolicy] = []
    try:
        left_out: list[dict] = []
        if args.suite:
            pool, notes, left_out = await suite_pool(env)
        else:
            pool, notes = await task_pool(env, args)
        tasks = sample_tasks(pool, args.sample_size, args.seed)
        seeds = episode_seeds(args.seed, args.episodes_per_task)
        plan = {
            "suite": args.suite,
            "modes": modes + [m + SEARCH for m in searching],
            "served": served,
            "search": search_cfg.model_dump(mode="json") if search_cfg else None,
            "tasks": tasks,
            "seeds": seeds,
            "max_steps": args.max_steps,
            "sampling": sampling.model_dump(mode="json"),
            "episodes_per_mode": len(tasks) * len(seeds),
        }
        eval_id = args.name or plan_id(plan)
        folder = settings.results_dir / eval_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "plan.json").write_text(json.dumps(plan | {"notes": notes}, indent=1))
        if args.suite:
            (folder / "left_out.json").write_text(json.dumps(left_out, indent=1))
        for note in notes:
            say(f"note: {note}")
        episodes = folder / "episodes.jsonl"
        records = read_records(episodes)
        done = {(r["mode"], r["task"], r["seed"]) for r in records}
        total = len(plan["modes"]) * plan["episodes_per_mode"]
        say(f"evaluation {eval_id}: {len(plan['modes'])} modes x {len(tasks)} tasks x {len(seeds)} seeds -> {folder}")
        if done:
            say(f"resuming: {len(done)} of {total} episodes already played")
        for name in modes:
            opened.append(await open_mode(name, trainer, settings, f"eval-{eval_id}", sampling))

        async def current(_: str):
            raise AssertionError("evaluation jobs carry their policy version")

        count = len(done)
        for task, seed in itertools.product(tasks, seeds):
            for mp in opened:
                if (mp.mode.name, task, seed) in done:
                    continue
                svc = Services(env=env, policy=mp.policy, reward=reward, current_policy=current)
                started = time.monotonic()
                result, failures = await play(
                    svc, lambda a, mp=mp, t=task, s=seed: _job(eval_id, mp, t, s, a, args, sampling), args.infra_retries
                )
                record = _record(mp.mode.name, task, seed, result, failures) | {"elapsed_s": time.monotonic() - started}
                records.append(_write(episodes, record))
                count += 1
                say(f"[{count}/{total}] {mp.mode.name} {task} seed {seed}: {_outcome(records[-1])}")
                name = mp.mode.name + SEARCH
                if mp.mode.name not in searching or (name, task, seed) in done:
                    continue

                async def fixed(_: str, mp=mp):
                    return mp.version  # the search samples the mode's own policy, as its episodes do

                searched = Services(env=env, policy=mp.policy, reward=reward, current_policy=fixed)
                started = time.monotonic()
                outcome, failures = await play_search(
                    searched,
                    lambda a, mp=mp, t=task, s=seed: _search_job(
                        eval_id, mp, t, s, a, search_cfg, search_temperature, sampling
                    ),
                    folder / "search",
                    args.infra_retries,
                )
                record = _record(name, task, seed, None, failures) | {"elapsed_s": time.monotonic() - started}
                if outcome is not None:
                    record |= {"scored": True, **outcome}
                records.append(_write(episodes, record))
                count += 1
                say(f"[{count}/{total}] {name} {task} seed {seed}: {_outcome(record)} ({record['steps']} env steps)")
    finally:
        for mp in opened:
            await mp.aclose()
        await env.aclose()
        await reward.aclose()
    results = summarise(eval_id, plan | {"notes": notes, "left_out": len(left_out)}, records)
    write_outputs(folder, results, records, served)
    return folder, results


def parser() -> argparse.ArgumentParser:
    """``halo eval``'s flags; each also takes the users' scripts' spelling (``--task_registry``, ``--mode``)."""
    p = argparse.ArgumentParser(description="Evaluate agent modes side by side on the same tasks and seeds.")
    p.add_argument("--modes", "--mode", nargs="+", required=True, metavar="MODE", help=f"of {', '.join(MODES)}")
    p.add_argument("--domain", nargs="+", help="sites whose tasks form the pool (e.g. playground gomail)")
    p.add_argument("--subset", nargs="+", help=f"groups of sites: {', '.join(SUBSETS)}")
    p.add_argument("--tasks", nargs="+", help="exact task ids (no sampling pool)")
    p.add_argument(
        "--suite",
        choices=SUITES,
        help="a named task set: real-v2-offline = every REAL v2 task the offline clones support "
        "(left_out.json lists the others with their reasons)",
    )
    p.add_argument(
        "--task-registry", "--task_registry", help="a registry snapshot, e.g. configs/real_v2_task_registry.json"
    )
    p.add_argument("--sample-size", "--sample_size", type=int, help="tasks drawn from the pool (default: all)")
    p.add_argument("--seed", type=int, default=42, help="drives task sampling and episode seeds")
    p.add_argument("--episodes-per-task", "--episodes_per_task", type=int, default=1)
    p.add_argument("--max-steps", "--max_steps", type=int, default=15)
    p.add_argument(
        "--infra-retries", "--infra_retries", type=int, default=2, help="replays of an episode failed on infrastructure"
    )
    p.add_argument(
        "--search",
        action="store_true",
        help="also evaluate each vLLM mode searching at test time (Agent Q): one MCTS search of each task and "
        "seed at the mode's policy, scored by whether the path it returns succeeds when replayed from the task's "
        "start in a fresh session (oracle_success_found: whether the search reached a success anywhere), its env "
        "steps reported as its cost",
    )
    p.add_argument(
        "--search-budget", "--search_budget", type=int, default=48, help="env steps one test-time search may take"
    )
    p.add_argument("--name", help="results folder name (default: a digest of the plan, so reruns resume)")
    return p


def _err(line: str) -> None:
    sys.stderr.write(f"{line}\n")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    if args.suite and (args.tasks or args.domain or args.subset or args.task_registry):
        _err("error: --suite names its own tasks; drop --tasks, --domain, --subset and --task-registry")
        return 2
    if args.sample_size is not None and args.sample_size < 1:
        _err("error: --sample-size must be at least 1")
        return 2
    if args.search and args.search_budget < 1:
        _err("error: --search-budget must be at least 1 env step")
        return 2
    try:
        folder, results = asyncio.run(evaluate(args, say=_err))
    except (ModeError, EvalError) as exc:
        _err(f"error: {exc}")
        return 2
    sys.stdout.write(f"{eval_report.markdown(results)}\nresults, table and chart in {folder}\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
