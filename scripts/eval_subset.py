"""One agent mode on a sampled subset of tasks (the users' command; `halo eval` with one mode).

    python scripts/eval_subset.py --mode qwen3vl_base --sample_size 30 \
        --task_registry configs/real_v2_task_registry.json --seed 42
    python scripts/eval_subset.py --mode qwen3vl_grpo --domain playground --episodes_per_task 2

Results, table and chart under <data_dir>/eval/<id>/ (docs/evaluation.md).
"""

from __future__ import annotations

import argparse
import sys

from halo_trainer.evaluation import run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", required=True)
    p.add_argument("--sample_size", type=int, default=30)
    p.add_argument("--task_registry")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--domain", nargs="+")
    p.add_argument("--subset", nargs="+")
    p.add_argument("--tasks", nargs="+")
    p.add_argument("--episodes_per_task", type=int, default=1)
    p.add_argument("--max_steps", type=int, default=15)
    p.add_argument("--infra_retries", type=int, default=2)
    p.add_argument("--name")
    args = p.parse_args()
    args.modes = [args.mode]
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
