"""Online MCTS + step-level DPO (Agent Q) with the users' command line, on top of the trainer's HTTP API.

    python scripts/train_mcts.py --policy_url http://localhost:8000 --domain playground \\
        --simulations 50 --ucb_c 1.414 --episodes 100

``--episodes`` counts searches; ``--jobs_per_update`` is the searches of one DPO iteration. The trainer service does the work (it must reach the same vLLM:
`--policy_url` becomes its policy URL when the CLI starts it); this script submits the run with
``halo train --algorithm mcts``, shows its progress, and exits non-zero if the run fails.
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
    p.add_argument("--policy_url", default="http://localhost:8000", help="vLLM server the searches sample from")
    p.add_argument("--trainer_url", default=os.environ.get("HALO_TRAINER_URL", "http://localhost:8400"))
    p.add_argument("--domain", required=True, help="playground, gomail, gocalendar, omnizon, zilloft")
    # Every run setting, the search's included, as the run's knobs declare it (docs/knobs.md).
    names = add_knob_arguments(p, knobs.SECTIONS)
    args = p.parse_args()
    knob_flags = train_flags({n: getattr(args, n) for n in names})
    return exec_halo_train(
        args.policy_url, args.trainer_url, ["--algorithm", "mcts", "--domain", args.domain, *knob_flags]
    )


if __name__ == "__main__":
    sys.exit(main())
