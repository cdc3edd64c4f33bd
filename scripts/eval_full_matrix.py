"""Every named agent mode on the same sampled tasks and seeds (the users' command; `halo eval`).

    python scripts/eval_full_matrix.py --mode qwen3vl_base qwen3vl_grpo qwen3vl_mcts gpt5_baseline \
        --task_registry configs/real_v2_task_registry.json --subset shopping --sample_size 30 --seed 42

Results, table (with the paired test between every two modes) and chart under
<data_dir>/eval/<id>/ (docs/evaluation.md).
"""

from __future__ import annotations

import sys

from halo_trainer.evaluation.matrix import main

if __name__ == "__main__":
    sys.exit(main())
