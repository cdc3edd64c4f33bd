"""The one loader (model, adapter, processor) and the LoRA layout that vLLM and the learner share."""

from __future__ import annotations

import re

import torch

from halo_model.loading import load_model, load_processor
from halo_model.lora import LANGUAGE_MODEL_LINEAR_LAYERS, language_model_targets, random_adapter


def test_the_model_loads_in_eval_mode_in_the_asked_dtype(tiny_model_dir) -> None:
    model = load_model(tiny_model_dir)
    assert not model.training and {p.dtype for p in model.parameters()} == {torch.float32}
    half = load_model(tiny_model_dir, dtype="bfloat16")
    assert {p.dtype for p in half.parameters()} == {torch.bfloat16}
    assert load_processor(tiny_model_dir).image_token_id == model.config.image_token_id


def test_lora_targets_are_the_language_models_linear_layers_only(tiny_model_dir) -> None:
    model = load_model(tiny_model_dir)
    pattern = re.compile(language_model_targets())
    matched = [name for name, _ in model.named_modules() if pattern.fullmatch(name)]
    layers = model.config.text_config.num_hidden_layers
    assert len(matched) == layers * len(LANGUAGE_MODEL_LINEAR_LAYERS)
    assert all(".language_model." in n and ".visual." not in n for n in matched)
    assert any(".visual." in n and n.endswith(("qkv", "proj")) for n, _ in model.named_modules())  # there to miss
    only_q = re.compile(language_model_targets(["q_proj"]))
    assert sum(bool(only_q.fullmatch(n)) for n, _ in model.named_modules()) == layers


def test_a_random_adapter_loads_trainable_or_frozen_and_changes_the_outputs(tiny_model_dir, tmp_path) -> None:
    adapter = random_adapter(tiny_model_dir, tmp_path / "a", seed=1, rank=4)
    trainable = load_model(tiny_model_dir, adapter, trainable=True)
    names = [n for n, p in trainable.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n and ".language_model." in n for n in names)
    frozen = load_model(tiny_model_dir, adapter)
    assert not any(p.requires_grad for p in frozen.parameters())
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        base_logits = load_model(tiny_model_dir)(input_ids=ids).logits
        adapted = frozen(input_ids=ids).logits
    assert not torch.allclose(base_logits, adapted)
    again = random_adapter(tiny_model_dir, tmp_path / "b", seed=1, rank=4)
    assert (again / "adapter_model.safetensors").read_bytes() == (adapter / "adapter_model.safetensors").read_bytes()


def test_the_model_is_read_straight_onto_the_asked_device_in_the_asked_dtype(tiny_model_dir, monkeypatch) -> None:
    """device_map: the weights are placed as they are read, never built in host memory and moved after
    (an 8B model would need its size in RAM first); here on the CPU, the device this machine has."""
    from transformers import Qwen3VLForConditionalGeneration

    def moved(self, *args, **kwargs):
        raise AssertionError("load_model moved the model after loading it")

    monkeypatch.setattr(Qwen3VLForConditionalGeneration, "to", moved)
    model = load_model(tiny_model_dir, dtype="bfloat16", device="cpu")
    assert {(p.device.type, p.dtype) for p in model.parameters()} == {("cpu", torch.bfloat16)}
    assert not model.training
    # The meta device shows the placement is load_model's: no parameter passes through the CPU on the way.
    meta = load_model(tiny_model_dir, device="meta")
    assert {p.device.type for p in meta.parameters()} == {"meta"}
