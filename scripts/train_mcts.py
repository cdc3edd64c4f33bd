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

from halo_train_handoff import exec_halo_train


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
    train_args = ["--algorithm", "mcts", "--domain", args.domain, "--episodes", str(args.episodes)]
    train_args += ["--seed", str(args.seed)]
    settings = ("simulations", "ucb_c", "searches_per_iteration", "max_children", "max_depth", "alpha", "theta")
    for flag in (*settings, "beta", "critic"):
        if (value := getattr(args, flag)) is not None:
            train_args += [f"--{flag.replace('_', '-')}", str(value)]
    return exec_halo_train(args.policy_url, args.trainer_url, train_args)


if __name__ == "__main__":
    sys.exit(main())
