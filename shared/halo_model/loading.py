"""Load the policy model and its processor: the one loader of the learner, the parity tests and the tools.

torch, transformers and peft are imported inside the functions so that importing ``halo_model``
costs nothing where only the model's name is needed (the vLLM launcher on the GPU target).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_processor(model_path: str | Path, **processor_kwargs: Any) -> Any:
    """The model's processor (tokenizer, chat template, image processor), exactly as vLLM loads it.

    ``processor_kwargs`` must equal the server's ``--mm-processor-kwargs``
    (``PolicySettings.processor_kwargs()``; the trainer's own ``TrainerSettings.processor_kwargs()``):
    another image budget gives another number of image tokens, and every rebuilt prompt would be
    refused. Each service passes its own settings' values; this function reads none.
    """
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(model_path), **processor_kwargs)


def load_model(
    model_path: str | Path,
    adapter_path: str | Path | None = None,
    *,
    dtype: str = "float32",
    device: str = "cpu",
    trainable: bool = False,
) -> Any:
    """Qwen3-VL (optionally with a PEFT LoRA adapter) in ``dtype`` on ``device``, in eval mode.

    Use the dtype the server uses to compare with its log-probs: float32 on the CPU target
    (``PolicySettings.resolved_dtype``); the learner passes its own (``TrainerSettings.resolved_dtype``).
    The weights are read straight onto ``device`` (``device_map``): an 8B model first built in host
    memory and then moved would need its size in RAM and twice the time. ``trainable=True`` leaves the
    adapter's LoRA weights trainable. The learner passes no adapter: it adds its own.
    """
    import torch
    from transformers import Qwen3VLForConditionalGeneration

    model = Qwen3VLForConditionalGeneration.from_pretrained(
        str(model_path), dtype=getattr(torch, dtype), device_map=torch.device(device)
    )
    if adapter_path is not None:
        from peft import PeftModel

        # PEFT puts the adapter's weights on the device of the layers they adapt.
        model = PeftModel.from_pretrained(model, str(adapter_path), is_trainable=trainable)
    return model.eval()
