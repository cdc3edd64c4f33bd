"""Online GRPO with the seeds' command line, on top of the trainer's HTTP API.

    python scripts/train_online_grpo.py --policy_url http://localhost:8000 --domain gomail \\
        --num_generations 8 --episodes 100 --lr 1e-6 --loss_type dr_grpo

The trainer service does the work (it must reach the same vLLM: `--policy_url` is checked against
it); this script submits the run, shows its progress, and exits non-zero if the run fails.
"""

from __future__ import annotations

import argparse
import os
import sys

import httpx


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy_url", default="http://localhost:8000", help="vLLM server the trainer samples from")
    p.add_argument("--trainer_url", default=os.environ.get("HALO_TRAINER_URL", "http://localhost:8400"))
    p.add_argument("--domain", required=True, help="playground, gomail, gocalendar, omnizon, zilloft")
    p.add_argument("--num_generations", type=int, default=None, help="group size N (default from rl_config.yaml)")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--lr", type=float, default=None, help="learning rate")
    p.add_argument("--loss_type", choices=["dr_grpo", "grpo"], default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    try:
        health = httpx.get(f"{args.policy_url.rstrip('/')}/health", timeout=5)
    except httpx.HTTPError as exc:
        print(f"error: vLLM not reachable at {args.policy_url}: {exc}", file=sys.stderr)
        return 2
    if health.status_code != 200:
        print(f"error: vLLM at {args.policy_url} is not healthy ({health.status_code})", file=sys.stderr)
        return 2
    cmd = [
        sys.executable,
        "-m",
        "halo.cli.main",
        "train",
        "--domain",
        args.domain,
        "--episodes",
        str(args.episodes),
        "--seed",
        str(args.seed),
    ]
    for flag, value in (
        ("--num-generations", args.num_generations),
        ("--lr", args.lr),
        ("--loss-type", args.loss_type),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    # A trainer the CLI starts samples from --policy_url (the trainer's own setting).
    env = {
        **os.environ,
        "HALO_TRAINER_PORT": args.trainer_url.rsplit(":", 1)[-1].rstrip("/"),
        "HALO_TRAINER_POLICY_URL": args.policy_url,
    }
    os.execvpe(cmd[0], cmd, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
