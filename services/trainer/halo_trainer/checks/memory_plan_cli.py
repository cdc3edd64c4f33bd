"""``halo memory-plan``: the learner's memory plan (``halo_trainer.learner.memory``) of the gpu target's
defaults, printed for a card without starting a run.

It sits above the trainer's config: it resolves the run a plain ``halo train`` would start on the gpu
target (configs/rl_config.yaml, the trainer's settings) and passes it to the plan, which reads no
config itself.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from halo.schemas import Algorithm, RunSpec
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import load_defaults, profile_for, resolve
from halo_trainer.learner.memory.dims import DTYPE_BYTES, QWEN3_VL_8B, ModelDims
from halo_trainer.learner.memory.fit import TWO_CARD_UTILIZATION, Card, plan
from halo_trainer.learner.memory.plan import (
    CARDS_GIB,
    POLICY_MAX_MODEL_LEN,
    POLICY_UTILIZATION,
    card_from_device,
    workload_for,
)


def main(argv: list[str] | None = None) -> int:
    """Print the plan of the gpu target's defaults (the trainer's settings, configs/rl_config.yaml)
    for a card, or of the card this machine has."""
    parser = argparse.ArgumentParser(prog="halo memory-plan", description=main.__doc__)
    parser.add_argument("--card-gib", type=float, help=f"card total, GiB as torch reports it ({CARDS_GIB})")
    parser.add_argument("--card", choices=sorted(CARDS_GIB), help="a named card instead of --card-gib")
    parser.add_argument(
        "--gpu-memory-utilization",
        type=float,
        help=f"vLLM's share (default: {POLICY_UTILIZATION} on a shared card, the policy's default; "
        f"{TWO_CARD_UTILIZATION} on its own)",
    )
    parser.add_argument("--max-model-len", type=int, default=POLICY_MAX_MODEL_LEN, help="vLLM's context, tokens")
    parser.add_argument("--two-cards", action="store_true", help="vLLM on another card (the learner's card alone)")
    parser.add_argument(
        "--learner-gpus", type=int, default=1, help="the learner's ranks (FSDP2 under torchrun): the plan is per card"
    )
    parser.add_argument("--micro-batch-size", type=int, help="override HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE")
    parser.add_argument("--dtype", choices=sorted(DTYPE_BYTES), help="override HALO_TRAINER_DTYPE")
    parser.add_argument("--no-checkpointing", action="store_true", help="gradient checkpointing off")
    parser.add_argument("--full-weights", nargs="*", default=None, help="full_weights presets or module names")
    parser.add_argument("--algorithm", choices=[a.value for a in Algorithm], default=Algorithm.GRPO.value)
    parser.add_argument("--model", help="config.json folder or name (default: the 8B's published sizes)")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    args = parser.parse_args(argv)

    settings = TrainerSettings(target="gpu")
    spec: dict[str, Any] = {"domain": "plan", "algorithm": args.algorithm}
    if args.full_weights is not None:
        spec["full_weights"] = args.full_weights
    cfg = resolve(RunSpec(**spec), "plan", ["plan"], load_defaults(settings.rl_config), profile_for("gpu"))
    learner = cfg.learner_config(settings.resolved_learner())
    work = workload_for(cfg, learner, args.dtype or settings.resolved_dtype())
    if args.learner_gpus < 1:
        parser.error(f"--learner-gpus {args.learner_gpus}: at least 1")
    work = replace(work, learner_gpus=args.learner_gpus)
    if args.micro_batch_size:
        work = replace(work, micro_batch_size=args.micro_batch_size)
    if args.no_checkpointing:
        work = replace(work, gradient_checkpointing=False)
    dims = ModelDims.from_pretrained(args.model) if args.model else QWEN3_VL_8B
    shares = settings.policy_shares_card and not args.two_cards
    utilization = args.gpu_memory_utilization or (POLICY_UTILIZATION if shares else TWO_CARD_UTILIZATION)
    if args.card or args.card_gib:
        card = Card(
            total_gib=CARDS_GIB[args.card] if args.card else args.card_gib,
            policy_shares_card=shares,
            gpu_memory_utilization=utilization,
            policy_max_model_len=args.max_model_len,
            policy_card_gib=None if shares else (CARDS_GIB[args.card] if args.card else args.card_gib),
        )
    else:
        try:
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("no CUDA device here")
            card = card_from_device("cuda", shares)
        except RuntimeError as exc:
            parser.error(f"{exc}: give the card with --card-gib or --card")
    result = plan(dims, work, card)
    sys.stdout.write((json.dumps(result.as_dict(), indent=1) if args.json else result.table()) + "\n")
    return 0 if result.fits else 1


if __name__ == "__main__":
    sys.exit(main())
