"""Online MCTS + step-level DPO (Agent Q) with the users' command line, on top of the trainer's HTTP API.

    python scripts/train_mcts.py --policy_url http://localhost:8000 --domain playground \\
        --simulations 50 --ucb_c 1.414 --episodes 100

``--episodes`` counts searches. The trainer service does the work (it must reach the same vLLM:
`--policy_url` becomes its policy URL when the CLI starts it); this script submits the run with
``halo train --algorithm mcts``, shows its progress, and exits non-zero if the run fails.
"""

from __future__ import annotations

import argparse
import os
import sys

import httpx


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy_url", default="http://localhost:8000", help="vLLM server the searches sample from")
    p.add_argument("--trainer_url", default=os.environ.get("HALO_TRAINER_URL", "http://localhost:8400"))
    p.add_argument("--domain", required=True, help="playground, gomail, gocalendar, omnizon, zilloft")
    p.add_argument("--episodes", type=int, default=100, help="searches to run")
    p.add_argument("--simulations", type=int, default=None, help="simulations per search (default 50)")
    p.add_argument("--ucb_c", type=float, default=None, help="UCB1 exploration constant (default 1.414)")
    p.add_argument("--searches_per_iteration", type=int, default=None, help="searches per DPO iteration")
    p.add_argument("--max_children", type=int, default=None)
    p.add_argument("--max_depth", type=int, default=None)
    p.add_argument("--alpha", type=float, default=None)
    p.add_argument("--theta", type=float, default=None)
    p.add_argument("--beta", type=float, default=None)
    p.add_argument("--critic", choices=["self", "openai", "progress"], default=None)
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
    cmd = [sys.executable, "-m", "halo.cli.main", "train", "--algorithm", "mcts", "--domain", args.domain]
    cmd += ["--episodes", str(args.episodes), "--seed", str(args.seed)]
    settings = ("simulations", "ucb_c", "searches_per_iteration", "max_children", "max_depth", "alpha", "theta")
    for flag in (*settings, "beta", "critic"):
        if (value := getattr(args, flag)) is not None:
            cmd += [f"--{flag.replace('_', '-')}", str(value)]
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
