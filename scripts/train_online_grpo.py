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

from halo_train_handoff import exec_halo_train

from halo.cli.knob_options import add_knob_arguments, train_flags
from halo.schemas import knobs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy_url", default="http://localhost:8000", help="vLLM server the trainer samples from")
    p.add_argument("--trainer_url", default=os.environ.get("HALO_TRAINER_URL", "http://localhost:8400"))
    p.add_argument("--domain", required=True, help="playground, gomail, gocalendar, omnizon, zilloft")
    # Every run setting of GRPO, as the run's knobs declare it (docs/knobs.md); unset = rl_config.yaml's.
    names = add_knob_arguments(p, knobs.GRPO_SECTIONS)
    args = p.parse_args()
    train_args = ["--domain", args.domain, *train_flags({n: getattr(args, n) for n in names})]
    return exec_halo_train(args.policy_url, args.trainer_url, train_args)


if __name__ == "__main__":
    sys.exit(main())
