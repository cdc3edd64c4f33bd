"""Full-weight versions for vLLM's in-place reload: what a folder of base weights must hold.

vLLM's ``reload_weights`` (``PolicyClient.publish_weights``) reads a model folder the way it
read the one it started from: every base weight as ``*.safetensors`` in transformers' naming
(``model.visual.*``, ``model.language_model.*``, ``lm_head.*``) with the model's ``config.json``.
The learner writes it (``Learner.weights.save_base_weights``, through ``full_weights.write_weights``);
``perturbed_weights`` writes a stand-in for a trained version, which the parity test uses the way it
uses ``lora.random_adapter``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from halo_model.full_weights import VISION

VISION_PREFIX = VISION + "."  # the vision tower and its mergers, in transformers' Qwen3-VL naming


def copy_model_files(source_dir: str | Path, out_dir: str | Path) -> None:
    """Copy everything but the weights (config, tokenizer, processor, chat template) next to new weights."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for f in Path(source_dir).iterdir():
        if f.is_file() and not f.name.endswith((".safetensors", ".safetensors.index.json", ".bin")):
            shutil.copy2(f, out / f.name)


def folder_bytes(directory: str | Path, suffix: str = ".safetensors") -> int:
    """Bytes of the weight files in a model folder (what a reload reads)."""
    return sum(f.stat().st_size for f in Path(directory).glob(f"*{suffix}"))


def perturbed_weights(
    model_path: str | Path, out_dir: str | Path, *, seed: int, prefix: str = VISION_PREFIX, scale: float = 0.05
) -> tuple[Path, list[str]]:
    """Save ``model_path``'s weights with seeded noise (``scale`` times each tensor's std) added to
    every parameter whose name starts with ``prefix``; returns the folder and those names."""
    import torch

    from halo_model.loading import load_model

    model = load_model(model_path)
    generator = torch.Generator().manual_seed(seed)
    changed = []
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.startswith(prefix):
                std = float(param.std()) if param.numel() > 1 else 1.0
                param.add_(torch.randn(param.shape, generator=generator) * scale * (std or 1.0))
                changed.append(name)
    if not changed:
        raise ValueError(f"no parameter of {model_path} starts with {prefix!r}")
    out = Path(out_dir)
    copy_model_files(model_path, out)
    model.save_pretrained(out, safe_serialization=True)
    return out, changed
