"""Will the learner fit on its card beside vLLM? A memory plan, computed before the model is loaded.

The trainer computes it when a run starts on the gpu target and refuses the run when it does not
fit (``halo_trainer.api.runs``), naming the one setting to change; ``halo memory-plan`` (``python -m
halo_trainer.learner.memory.plan``) prints it without starting a run.

This module is its entry point: a run's workload from the trainer's settings (``workload_for``), the
card as it is now (``card_from_device``) and the command line (``main``). The plan itself is in the
sibling modules: the model's sizes (``dims``), what each part of the learner holds and how it is
counted (``parts``), and whether it fits beside vLLM, with the one change that makes it fit when
it does not (``fit``).

These are computed figures from CPU measurements; no GPU has checked them yet.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from halo_trainer.learner.memory.dims import (
    DTYPE_BYTES,
    GIB,
    QWEN3_VL_8B,
    QWEN3_VL_8B_MAX_PIXELS,
    QWEN3_VL_8B_MIN_PIXELS,
    ModelDims,
)
from halo_trainer.learner.memory.fit import TWO_CARD_UTILIZATION, Card, plan
from halo_trainer.learner.memory.parts import Workload

# The policy server's defaults (HALO_POLICY_GPU_MEMORY_UTILIZATION, HALO_POLICY_MAX_MODEL_LEN; a test
# checks they are its settings' defaults): the CLI's planning values. A run's check measures instead.
POLICY_UTILIZATION, POLICY_MAX_MODEL_LEN = 0.45, 8192
# Nominal cards as torch.cuda.mem_get_info reports their total (about; the driver keeps some).
CARDS_GIB = {"h100-80gb": 79.1, "a100-80gb": 79.1, "h200": 139.8, "a100-40gb": 39.4, "l40s": 44.4}


# -- from the trainer's settings ----------------------------------------------------------------
def workload_for(run: Any, learner: Any, dtype: str, processor: Any = None) -> Workload:
    """A run's workload: ``run`` a ``RunConfig``, ``learner`` its resolved ``LearnerConfig``, ``processor``
    the model's (its image budget; None = the 8B's published one)."""
    max_pixels, min_pixels = pixel_limits(processor)
    viewport = run.sampling.viewport
    return Workload(
        dtype=dtype,
        gradient_checkpointing=bool(learner.gradient_checkpointing),
        micro_batch_size=learner.micro_batch_size,
        completion_tokens=run.sampling.max_tokens,
        viewport=(viewport.width, viewport.height),
        max_pixels=max_pixels,
        min_pixels=min_pixels,
        lora_r=learner.lora_r,
        lora_targets=tuple(learner.lora_target_modules),
        full_weights=tuple(learner.full_weights),
        kl_coef=learner.kl_coef,
        grammar=run.sampling.structured_outputs == "regex",
        dpo=str(getattr(run.algorithm, "value", run.algorithm)) == "mcts",
        group_size=run.num_generations if str(getattr(run.group_mode, "value", run.group_mode)) == "step" else 1,
    )


def pixel_limits(processor: Any) -> tuple[int, int]:
    """(max, min) pixels of an image after the processor resizes it."""
    image = getattr(processor, "image_processor", None)
    size = getattr(image, "size", None) or {}
    max_pixels = size.get("longest_edge") or getattr(image, "max_pixels", None) or QWEN3_VL_8B_MAX_PIXELS
    min_pixels = size.get("shortest_edge") or getattr(image, "min_pixels", None) or QWEN3_VL_8B_MIN_PIXELS
    return int(max_pixels), int(min_pixels)


def card_from_device(device: str, shares_card: bool) -> Card:
    """The learner's CUDA card as it is now (torch.cuda.mem_get_info): on a shared card vLLM (started
    first, as Compose orders it) already holds its share, so the free memory is the learner's."""
    import torch

    free, total = torch.cuda.mem_get_info(torch.device(device))
    return Card(total_gib=total / GIB, free_gib=free / GIB, policy_shares_card=shares_card)


# -- command line ---------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Print the plan of the gpu target's defaults (the trainer's settings, configs/rl_config.yaml)
    for a card, or of the card this machine has."""
    from halo.schemas import RunSpec
    from halo.settings.trainer import TrainerSettings
    from halo_trainer.config import load_defaults, profile_for, resolve

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
    parser.add_argument("--micro-batch-size", type=int, help="override HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE")
    parser.add_argument("--dtype", choices=sorted(DTYPE_BYTES), help="override HALO_TRAINER_DTYPE")
    parser.add_argument("--no-checkpointing", action="store_true", help="gradient checkpointing off")
    parser.add_argument("--full-weights", nargs="*", default=None, help="full_weights presets or module names")
    parser.add_argument("--algorithm", choices=["grpo", "mcts"], default="grpo")
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
