"""The policy's LoRA layout, one for the learner and vLLM, and random adapters for tests and benchmarks.

vLLM's Qwen3-VL applies LoRA to the language model only (vision-tower keys are dropped with a
warning) and packs ``q/k/v_proj`` into ``qkv_proj`` and ``gate/up_proj`` into ``gate_up_proj``;
it unpacks PEFT's per-projection weights itself. So the adapter targets linear layers of the
language model only, by a regex that cannot match the vision tower (``model.visual...``), and is
saved with plain ``save_pretrained``: that directory is what ``/v1/load_lora_adapter`` takes.
A LoRA on the vision tower would make the served policy differ from the trained one;
``halo_model.full_weights`` trains vision modules in full instead, and vLLM reloads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Every linear layer of the text decoder.
LANGUAGE_MODEL_LINEAR_LAYERS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def language_model_targets(modules: Sequence[str] = LANGUAGE_MODEL_LINEAR_LAYERS) -> str:
    """A PEFT ``target_modules`` regex matching the given linear layers inside ``language_model`` only."""
    return r".*\.language_model\..*\.(" + "|".join(modules) + r")$"


def lora_config(rank: int, alpha: float, modules: Sequence[str] = LANGUAGE_MODEL_LINEAR_LAYERS) -> Any:
    """The PEFT ``LoraConfig`` of the policy adapter (rank must be <= the server's max LoRA rank).

    No dropout: it would make the learner's log-probs differ from the sampler's (ratio != 1 on-policy).
    """
    from peft import LoraConfig

    return LoraConfig(
        r=rank, lora_alpha=alpha, target_modules=language_model_targets(modules), lora_dropout=0.0, bias="none"
    )


def random_adapter(
    model_path: str | Path, out_dir: str | Path, *, seed: int, rank: int = 8, alpha: float = 16, scale: float = 0.5
) -> Path:
    """Save a LoRA adapter with random A *and* B (PEFT initialises B to zero, a no-op adapter).

    A stand-in for a trained policy version: it changes the model's outputs by a seeded amount,
    which is what the hot-loading tests and the benchmark need.
    """
    import torch
    from peft import get_peft_model

    from halo_model.loading import load_model

    model = get_peft_model(load_model(model_path), lora_config(rank, alpha))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * scale)
    out = Path(out_dir)
    model.save_pretrained(out)
    return out
