"""One agent mode on a sampled subset of tasks (the users' command; `halo eval` with one mode).

    python scripts/eval_subset.py --mode qwen3vl_base --sample_size 30 \
        --task_registry configs/real_v2_task_registry.json --seed 42
    python scripts/eval_subset.py --mode qwen3vl_grpo --domain playground --episodes_per_task 2

Results, table and chart under <data_dir>/eval/<id>/ (docs/evaluation.md).
"""

from __future__ import annotations

import sys

from halo_trainer.evaluation.matrix import parser, run


def main() -> int:
    p = parser()
    p.set_defaults(sample_size=30)
    args = p.parse_args()
    if len(args.modes) != 1:
        p.error("--mode takes one mode here; scripts/eval_full_matrix.py evaluates several")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
