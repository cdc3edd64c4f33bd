"""Every named agent mode on the same sampled tasks and seeds (the users' command; `halo eval`).

    python scripts/eval_full_matrix.py --mode qwen3vl_base qwen3vl_grpo qwen3vl_mcts gpt5_baseline \
        --task_registry configs/real_v2_task_registry.json --subset shopping --sample_size 30 --seed 42

Results, table (with the paired test between every two modes) and chart under
<data_dir>/eval/<id>/ (docs/evaluation.md).
"""

from __future__ import annotations

import argparse
import sys

from halo_trainer.evaluation import run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", nargs="+", required=True, dest="modes")
    p.add_argument("--task_registry")
    p.add_argument("--sample_size", type=int)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--domain", nargs="+")
    p.add_argument("--subset", nargs="+")
    p.add_argument("--tasks", nargs="+")
    p.add_argument("--episodes_per_task", type=int, default=1)
    p.add_argument("--max_steps", type=int, default=15)
    p.add_argument("--infra_retries", type=int, default=2)
    p.add_argument("--name")
    return run(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
