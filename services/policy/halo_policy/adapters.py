"""The policy's LoRA layout, shared by the learner and vLLM, and random adapters for tests/bench.

vLLM's Qwen3-VL applies LoRA to the language model only (vision-tower keys are dropped with a
warning) and packs ``q/k/v_proj`` into ``qkv_proj`` and ``gate/up_proj`` into ``gate_up_proj``;
it unpacks PEFT's per-projection weights itself. So the learner's adapter targets exactly the
language model's linear layers, by a regex that cannot match the vision tower, and is saved with
plain ``save_pretrained``: that directory is what ``/v1/load_lora_adapter`` takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Every linear layer of the text decoder, none of the vision tower's (``model.visual...``).
LANGUAGE_MODEL_TARGETS = r".*language_model\.layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)"


def lora_config(rank: int = 8, alpha: int = 16, dropout: float = 0.0) -> Any:
    """The PEFT ``LoraConfig`` of the policy adapter (rank must be <= the server's max LoRA rank)."""
    from peft import LoraConfig

    return LoraConfig(
        r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=LANGUAGE_MODEL_TARGETS, bias="none"
    )


def random_adapter(
    model_path: str | Path, out_dir: str | Path, *, seed: int, rank: int = 8, scale: float = 0.5
) -> Path:
    """Save a LoRA adapter with random A *and* B (PEFT initialises B to zero, a no-op adapter).

    A stand-in for a trained policy version: it changes the model's outputs by a seeded amount,
    which is what the hot-loading tests and the benchmark need.
    """
    import torch
    from peft import get_peft_model
    from transformers import Qwen3VLForConditionalGeneration

    base = Qwen3VLForConditionalGeneration.from_pretrained(str(model_path), dtype=torch.float32)
    model = get_peft_model(base, lora_config(rank=rank))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * scale)
    out = Path(out_dir)
    model.save_pretrained(out)
    return out
