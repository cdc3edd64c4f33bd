"""Will the learner fit on its card beside vLLM? A memory plan, computed before the model is loaded.

The trainer computes it when a run starts on the gpu target and refuses the run when it does not
fit (``halo_trainer.api.runs``), naming the one setting to change; ``halo memory-plan``
(``halo_trainer.checks.memory_plan_cli``) prints it without starting a run.

This module is its entry point: a run's workload from the run's resolved settings, which its caller
passes (``workload_for``; the plan sits below the trainer's config and never reads it), and the card as
it is now (``card_from_device``). The plan itself is in the sibling modules: the model's sizes (``dims``), what each part of the learner holds and how it is
counted (``parts``), and whether it fits beside vLLM, with the one change that makes it fit when
it does not (``fit``).

These are computed figures from CPU measurements; no GPU has checked them yet.
"""

from __future__ import annotations

from typing import Any

from halo.schemas.choices import ALGORITHMS, Algorithm
from halo_trainer.learner.memory.dims import GIB, QWEN3_VL_8B_MAX_PIXELS, QWEN3_VL_8B_MIN_PIXELS, ModelDims
from halo_trainer.learner.memory.fit import Card, plan
from halo_trainer.learner.memory.parts import Workload

# What the run-start check and the command line use, in one import.
__all__ = ["CARDS_GIB", "POLICY_MAX_MODEL_LEN", "POLICY_UTILIZATION", "Card", "ModelDims", "plan", "workload_for"]

# The policy server's defaults (HALO_POLICY_GPU_MEMORY_UTILIZATION, HALO_POLICY_MAX_MODEL_LEN; a test
# checks they are its settings' defaults): the CLI's planning values. A run's check measures instead.
POLICY_UTILIZATION, POLICY_MAX_MODEL_LEN = 0.45, 8192
# Nominal cards as torch.cuda.mem_get_info reports their total (about; the driver keeps some).
CARDS_GIB = {"h100-80gb": 79.1, "a100-80gb": 79.1, "h200": 139.8, "a100-40gb": 39.4, "l40s": 44.4}


# -- from the run's resolved settings ------------------------------------------------------------
def workload_for(run: Any, learner: Any, dtype: str, processor: Any = None, learner_gpus: int = 1) -> Workload:
    """A run's workload: ``run`` a ``RunConfig``, ``learner`` its resolved ``LearnerConfig``, ``processor``
    the model's (its image budget; None = the 8B's published one), ``learner_gpus`` the learner's ranks."""
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
        dpo=ALGORITHMS[Algorithm(run.algorithm)].trains_by_dpo,
        group_size=run.num_generations if str(getattr(run.group_mode, "value", run.group_mode)) == "step" else 1,
        learner_gpus=learner_gpus,
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
