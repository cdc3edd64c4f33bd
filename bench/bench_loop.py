"""Training loop: env steps per second of a short fixed-target GRPO run, synchronous against asynchronous.

The goal: the loop's env steps per second on the fixed-target task at least 5x the
0.025 episodes/s it ran at before that work, and the asynchronous pipeline (workers sampling while the learner updates) at
least 2x a synchronous mode of the same loop, both measured in one bench.

Starts a private stack (clone server, env, reward, vLLM on the CPU and its own redis-server; the
trainer service is not started) on its own ports and data folder, then runs the trainer's own
``GrpoLoop`` and rollout workers (``halo_trainer.worker.work``, as many as the trainer runs) in this
process, as the trainer service does, once per mode:

- synchronous: ``prefetch_updates = 0``, the workers wait while the learner updates, publishes the
  adapter, evaluates and checkpoints;
- asynchronous: ``prefetch_updates = 1``, the next update's jobs stay in flight meanwhile.

Same task (``local.playground-1``), episodes, seeds and evaluation (the tiny profile, N=8 step
groups, 4 jobs per update, eval every 3 updates on 4 held-out seeds, the lab notebook's fixed-target
command); a fresh run (run id, learner from the base weights) each. A short warm-up run first
pays the stack's first-use costs (vLLM's first requests, Chromium's first contexts) for neither
mode. Env steps are the training candidates executed (one env ``/step`` each; evaluation episodes
are not counted); the wall time is the whole ``GrpoLoop.run``, baseline and later evaluations
included, as in a real run.

    .venv/bin/python bench/bench_loop.py [--episodes 16] [--warmup-episodes 4] [--base-port 9200] [--redis-port 9279]

Writes bench/results/loop.json and prints a summary. The machine's cores are shared with whatever
else runs: the ratio of the two modes, measured minutes apart, is what to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import platform
import secrets
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from inprocess_loop import private_stack, run_grpo  # noqa: E402

TASK = "local.playground-1"
BASELINE_EPISODES_PER_S = 0.025  # the loop's figure before it was made faster
GOALS = {"episodes_per_s_vs_baseline": 5.0, "async_vs_sync_env_steps_per_s": 2.0}


async def one_run(mode: str, prefetch: int, episodes: int, base_model, processor) -> dict:
    """One fresh fixed-target run in ``mode``; what it did and how long it took."""
    from halo.schemas import RunSpec
    from halo.settings.trainer import TrainerSettings
    from halo_trainer.config import load_defaults, resolve
    from halo_trainer.learner.learner import Learner

    settings = TrainerSettings()
    run_id = f"bench-loop-{mode}-{secrets.token_hex(3)}"
    spec = RunSpec(domain="playground", tasks=[TASK], episodes=episodes, eval_every=3, eval_episodes=4)
    cfg = resolve(spec, run_id, [TASK], load_defaults(settings.rl_config), "tiny")
    cfg = cfg.model_copy(update={"prefetch_updates": prefetch})
    # Count the training env steps each update learns from, and when each update ends.
    env_steps, update_ends = [0], []

    def count(loop) -> None:
        learn_from, close_update = loop._learn_from, loop.parts.close_update

        async def counted_learn_from(messages):
            env_steps[0] += sum(
                1 for r in messages for t in r.transitions if t.action is not None and not t.infra_error
            )
            return await learn_from(messages)

        async def timed_close_update(metrics):
            await close_update(metrics)
            update_ends.append(time.monotonic())

        loop._learn_from, loop.parts.close_update = counted_learn_from, timed_close_update

    learner = Learner(copy.deepcopy(base_model), cfg.learner_config(settings.learner))
    done = await run_grpo(cfg, learner, processor, settings, worker_prefix="bench-worker", instrument=count)
    loop, outcome, started, wall = done.loop, done.outcome, done.started, done.wall_s
    metrics = [json.loads(x) for x in (settings.runs_dir / run_id / "metrics.jsonl").read_text().splitlines()]
    evals = [json.loads(x) for x in (settings.runs_dir / run_id / "eval.jsonl").read_text().splitlines()]
    first_update = update_ends[0] - started if update_ends else float("nan")
    steady = update_ends[-1] - update_ends[0] if len(update_ends) > 1 else float("nan")
    return {
        "run_id": run_id,
        "outcome": outcome,
        "prefetch_updates": prefetch,
        "rollout_workers": settings.rollout_workers,
        "updates": loop.c.updates,
        "episodes": loop.c.episodes_done,
        "env_steps": env_steps[0],
        "jobs_published": loop.c.jobs_published,
        "infra_failed_jobs": loop.c.infra_failed_jobs,
        "wall_s": round(wall, 1),
        "env_steps_per_s": round(env_steps[0] / wall, 3),
        "episodes_per_s": round(loop.c.episodes_done / wall, 4),
        "s_per_update": round(wall / max(loop.c.updates, 1), 1),
        # Without the start (baseline evaluation, first jobs): updates 2..n, what a long run sustains.
        "s_per_update_after_first": round(steady / (len(update_ends) - 1), 1) if len(update_ends) > 1 else None,
        "first_update_s": round(first_update, 1),
        "learner_update_s_median": round(statistics.median(m["train/update_s"] for m in metrics), 2),
        "job_s_median": round(statistics.median(m["rollout/job_s"] for m in metrics if "rollout/job_s" in m), 1),
        "staleness_mean": round(statistics.fmean(m.get("rollout/staleness", 0.0) for m in metrics), 2),
        "dropped_stale": sum(int(m.get("rollout/dropped_stale", 0)) for m in metrics),
        "sample_success_rate_last_update": metrics[-1].get("rollout/sample_success_rate"),
        "eval_success_rate": [(e["update"], e["eval/success_rate"]) for e in evals],
    }


async def measure(args: argparse.Namespace) -> dict:
    from halo.settings.trainer import TrainerSettings
    from halo_model.loading import load_model, load_processor

    settings = TrainerSettings()
    base_model = await asyncio.to_thread(load_model, settings.model, device="cpu")
    processor = await asyncio.to_thread(load_processor, settings.model)
    runs: dict[str, dict] = {}
    if args.warmup_episodes:
        warm = await one_run("warmup", 1, args.warmup_episodes, base_model, processor)
        print(f"  warm-up: {warm['episodes']} episodes in {warm['wall_s']} s")
    for mode, prefetch in (("sync", 0), ("async", 1)):
        runs[mode] = await one_run(mode, prefetch, args.episodes, base_model, processor)
        r = runs[mode]
        # Each finished mode is kept at once (the data folder): a run cut short still shows what it measured.
        (TrainerSettings().data_dir / "loop-partial.json").write_text(json.dumps(runs, indent=2) + "\n")
        print(
            f"  {mode}: {r['episodes']} episodes, {r['env_steps']} env steps in {r['wall_s']} s "
            f"({r['env_steps_per_s']} steps/s, {r['episodes_per_s']} episodes/s, {r['s_per_update']} s/update)"
        )
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16, help="training episodes per mode (4 per update)")
    parser.add_argument("--warmup-episodes", type=int, default=4, help="a first run that neither mode is charged")
    parser.add_argument("--base-port", type=int, default=9200, help="sites; env, reward, policy on the next ports")
    parser.add_argument("--redis-port", type=int, default=9279)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill stops the private stack too (finally)

    from halo_model.resolution import resolve_model

    model = resolve_model(None, "cpu", build=True)  # the tiny model of the default data folder
    load_start = os.getloadavg()[0]
    # The stack's settings go to this process's environment too: its trainer settings read them.
    with private_stack(args.base_port, args.redis_port, ROOT / "var" / "bench-loop", model):
        runs = asyncio.run(measure(args))
    sync, asyn = runs["sync"], runs["async"]
    ratios = {
        "async_vs_sync_env_steps_per_s": round(asyn["env_steps_per_s"] / sync["env_steps_per_s"], 3),
        "async_vs_sync_episodes_per_s": round(asyn["episodes_per_s"] / sync["episodes_per_s"], 3),
        "sync_episodes_per_s_vs_baseline": round(sync["episodes_per_s"] / BASELINE_EPISODES_PER_S, 2),
        "async_episodes_per_s_vs_baseline": round(asyn["episodes_per_s"] / BASELINE_EPISODES_PER_S, 2),
    }
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m_start": round(load_start, 1),
            "load_average_1m_end": round(os.getloadavg()[0], 1),  # other work on the machine inflates every time
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "settings": {
            "task": TASK,
            "episodes": args.episodes,
            "warmup_episodes": args.warmup_episodes,
            "profile": "tiny",
            "eval": "every 3 updates, 4 held-out seeds",
        },
        "baseline_episodes_per_s": BASELINE_EPISODES_PER_S,
        "goals": GOALS,
        "runs": runs,
        "ratios": ratios,
        "goals_met": {
            "episodes_per_s_vs_baseline": ratios["async_episodes_per_s_vs_baseline"]
            >= GOALS["episodes_per_s_vs_baseline"],
            "async_vs_sync_env_steps_per_s": ratios["async_vs_sync_env_steps_per_s"]
            >= GOALS["async_vs_sync_env_steps_per_s"],
        },
    }
    out = ROOT / "bench" / "results" / "loop.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"training loop ({os.cpu_count()} CPUs, load average {load_start:.1f} -> {os.getloadavg()[0]:.1f}), "
        f"results in {out.relative_to(ROOT)}"
    )
    for key, value in ratios.items():
        print(f"  {key:38s} {value}")


if __name__ == "__main__":
    main()
