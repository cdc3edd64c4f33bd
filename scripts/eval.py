"""Greedy evaluation of a policy on a domain's tasks: success rate per task and overall, 95% intervals.

    python scripts/eval.py --domain playground                       # the base model (mode qwen3vl_base)
    python scripts/eval.py --domain playground --adapter var/runs/<run>/adapters/v12   # a trained LoRA
    python scripts/eval.py --domain gomail --episodes 3 --out results.json

Runs against the local stack (or any env/reward/vLLM set by the usual HALO_* settings): episodes
are played by the trainer's own rollout code with temperature 0, one sample per step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from halo.clients import EnvClient, RewardClient
from halo.schemas import GroupMode, PolicyVersion, RolloutJob
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import EVAL_SEED_OFFSET, load_defaults, profile_for, sampling_for
from halo_trainer.metrics import wilson_interval
from halo_trainer.rollout import Services, run_job
from halo_trainer.worker import policy_client


async def evaluate(args: argparse.Namespace) -> dict:
    settings = TrainerSettings()
    run_id = f"eval-{time.strftime('%Y%m%d-%H%M%S')}"
    # The trainer's own client and the run defaults' sampling for its target, as a run would use.
    sampling = sampling_for(load_defaults(settings.rl_config), profile_for(settings.target))
    async with policy_client(settings) as policy:
        version = PolicyVersion(run_id=run_id, version=0, adapter_name=policy.base_model, created_at=time.time())
        if args.adapter:
            name = f"{run_id}-adapter"
            await policy.load_adapter(name, str(Path(args.adapter).resolve()))
            version = PolicyVersion(
                run_id=run_id, version=1, adapter_name=name, adapter_path=args.adapter, created_at=time.time()
            )

        async def current(_: str) -> PolicyVersion:
            return version

        env = EnvClient(settings.env_url, timeout_s=settings.request_timeout_s)
        reward = RewardClient(settings.reward_url, timeout_s=settings.request_timeout_s)
        services = Services(env=env, policy=policy, reward=reward, current_policy=current)
        tasks = args.task or [t.id for t in await env.tasks(args.domain)]
        if not tasks:
            raise SystemExit(f"no tasks for domain {args.domain!r}")
        jobs = [
            RolloutJob(
                job_id=f"{run_id}-{i}",
                run_id=run_id,
                task_id=task,
                group_id=f"{run_id}-{i}",
                group_mode=GroupMode.EPISODE,
                group_size=1,
                policy=version,
                temperature=0.0,
                seed=EVAL_SEED_OFFSET + k,
                max_steps=args.max_steps,
                purpose="eval",
                sampling=sampling,
            )
            for i, (task, k) in enumerate((t, k) for t in tasks for k in range(args.episodes))
        ]
        per_task: dict[str, list[bool]] = {t: [] for t in tasks}
        for done, job in enumerate(jobs, 1):
            result = await run_job(services, job)
            for ep in result.episodes:
                per_task[job.task_id].append(bool(ep.success))
            print(f"\r{done}/{len(jobs)} episodes", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        if args.adapter:
            await policy.unload_adapter(version.adapter_name)
        await env.aclose()
        await reward.aclose()
    rows = {}
    for task, outcomes in per_task.items():
        low, high = wilson_interval(sum(outcomes), len(outcomes))
        rows[task] = {
            "success_rate": sum(outcomes) / max(len(outcomes), 1),
            "episodes": len(outcomes),
            "ci_low": low,
            "ci_high": high,
        }
    everything = [o for outs in per_task.values() for o in outs]
    low, high = wilson_interval(sum(everything), len(everything))
    return {
        "domain": args.domain,
        "policy": "adapter" if args.adapter else "base",
        "adapter": args.adapter,
        "tasks": rows,
        "overall": {
            "success_rate": sum(everything) / max(len(everything), 1),
            "episodes": len(everything),
            "ci_low": low,
            "ci_high": high,
        },
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--domain", required=True)
    p.add_argument("--task", action="append", help="task id (repeatable); default: every task of the domain")
    p.add_argument("--adapter", help="a PEFT adapter folder (e.g. var/runs/<run>/adapters/v<k>); default: base")
    p.add_argument("--episodes", type=int, default=2, help="episodes per task (different held-out seeds)")
    p.add_argument("--max-steps", type=int, default=15)
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args()
    report = asyncio.run(evaluate(args))
    for task, row in report["tasks"].items():
        print(f"{task:<24} {row['success_rate']:.2f}  [{row['ci_low']:.2f}, {row['ci_high']:.2f}]  n={row['episodes']}")
    o = report["overall"]
    print(f"{'overall':<24} {o['success_rate']:.2f}  [{o['ci_low']:.2f}, {o['ci_high']:.2f}]  n={o['episodes']}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
