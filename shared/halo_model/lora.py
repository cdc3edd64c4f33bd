"""The policy's LoRA layout, one for the learner and vLLM, and random adapters for tests and benchmarks.

vLLM packs Qwen3-VL's ``q/k/v_proj`` into ``qkv_proj`` and ``gate/up_proj`` into ``gate_up_proj``
and unpacks PEFT's per-projection weights itself, so the adapter is saved with plain
``save_pretrained``: that directory is what ``/v1/load_lora_adapter`` takes.

Where the adapter reaches is the run's ``lora_target`` preset (``LORA_TARGETS``):

- ``language``: the text decoder's linear layers only, by a regex that cannot match the vision
  side (``model.visual...``). Every vLLM server applies it.
- ``language+merger``: also the connector, the patch merger and the deepstack mergers.
- ``language+tower``: also every ViT block (attention ``qkv``/``proj``, MLP ``linear_fc1/2``).

vLLM 0.32 applies the vision-side keys only when started with ``--enable-tower-connector-lora``
(``HALO_POLICY_TOWER_LORA``); without it they are dropped with a start-up warning, and the served
policy would silently differ from the trained one (``halo_trainer.checks.tower_check`` refuses such a run).
The patch embedding is a Conv3d, which vLLM cannot adapt: it is never a target;
``halo_model.full_weights`` trains it (and anything else) in full instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

from halo.schemas.choices import LoraTarget

# Every linear layer of the text decoder.
LANGUAGE_MODEL_LINEAR_LAYERS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LORA_TARGETS: tuple[str, ...] = get_args(LoraTarget)

# The vision side by HF module name (vLLM maps PEFT's ``base_model.model.model.visual...`` keys).
# The connector: the patch merger and the deepstack mergers.
CONNECTOR_TARGETS = r"model\.visual\.(merger|deepstack_merger_list\.\d+)\.linear_fc[12]"
# The tower: every ViT block's linear layers.
TOWER_TARGETS = r"model\.visual\.blocks\.\d+\.(attn\.(qkv|proj)|mlp\.linear_fc[12])"


def language_model_targets(modules: Sequence[str] = LANGUAGE_MODEL_LINEAR_LAYERS) -> str:
    """A PEFT ``target_modules`` regex matching the given linear layers inside ``language_model`` only."""
    return r".*\.language_model\..*\.(" + "|".join(modules) + r")$"


def reaches_vision(target: str) -> bool:
    """Whether a ``lora_target`` preset adapts vision modules (which need a server with tower LoRA)."""
    return target != "language"


def target_modules(target: str = "language", modules: Sequence[str] = LANGUAGE_MODEL_LINEAR_LAYERS) -> str:
    """The PEFT ``target_modules`` regex of a ``lora_target`` preset (``modules``: the language layers)."""
    if target not in LORA_TARGETS:
        raise ValueError(f"lora_target {target!r}: one of {', '.join(LORA_TARGETS)}")
    language = language_model_targets(modules)
    if target == "language":
        return language  # exactly the adapter of runs that predate the presets
    vision = [CONNECTOR_TARGETS] + ([TOWER_TARGETS] if target == "language+tower" else [])
    # PEFT full-matches a string regex against each module name.
    return "(" + "|".join([language, *(r".*" + v + "$" for v in vision)]) + ")"


def lora_config(
    rank: int, alpha: float, modules: Sequence[str] = LANGUAGE_MODEL_LINEAR_LAYERS, target: str = "language"
) -> Any:
    """The PEFT ``LoraConfig`` of the policy adapter (rank must be <= the server's max LoRA rank).

    No dropout: it would make the learner's log-probs differ from the sampler's (ratio != 1 on-policy).
    """
    from peft import LoraConfig

    return LoraConfig(
        r=rank, lora_alpha=alpha, target_modules=target_modules(target, modules), lora_dropout=0.0, bias="none"
    )


def random_adapter(
    model_path: str | Path,
    out_dir: str | Path,
    *,
    seed: int,
    rank: int = 8,
    alpha: float = 16,
    scale: float = 0.5,
    target: str = "language",
    dtype: str = "float32",
) -> Path:
    """Save a LoRA adapter with random A *and* B (PEFT initialises B to zero, a no-op adapter).

    A stand-in for a trained policy version: it changes the model's outputs by a seeded amount,
    which is what the hot-loading tests, the benchmark and ``halo doctor`` need. ``dtype``: the
    model's, loaded on the CPU to find the adapter's shapes (bfloat16 halves an 8B's host memory).
    """
    import torch
    from peft import get_peft_model

    from halo_model.loading import load_model

    model = get_peft_model(load_model(model_path, dtype=dtype), lora_config(rank, alpha, target=target))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * scale)
    out = Path(out_dir)
    model.save_pretrained(out)
    return out
