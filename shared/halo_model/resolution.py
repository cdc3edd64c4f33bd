"""Which model the policy serves and the learner trains, from a service's own settings values.

Both the vLLM launcher and the trainer call ``resolve_model`` with their own fields (each service
reads only its settings class); on the CPU target the answer is the tiny Qwen3-VL, which the
builder makes deterministically (same folder, same weights for every caller), so whoever needs
it first builds it.
"""

from __future__ import annotations

from typing import Literal

from halo.settings.policy import GPU_DEFAULT_MODEL


def resolve_model(model: str | None, target: Literal["cpu", "gpu"], *, tiny_seed: int = 0, build: bool = True) -> str:
    """``model`` when given, else the target's default: the 8B on ``gpu``, the tiny model on ``cpu``.

    ``build=False`` only names the tiny model's folder (it may not exist yet).
    """
    if model:
        return model
    if target == "gpu":
        return GPU_DEFAULT_MODEL
    from halo_model.tiny import build_tiny_model, default_model_dir

    return str(build_tiny_model(seed=tiny_seed) if build else default_model_dir(seed=tiny_seed))
