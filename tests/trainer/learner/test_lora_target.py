"""``lora_target`` presets: which parameters of the tiny Qwen3-VL get a LoRA adapter under each one.

``language`` must stay exactly the adapter runs had before the presets (their checkpoints resume);
``language+merger`` adds the connector (the patch merger and the deepstack mergers) and
``language+tower`` every ViT block's linear layers too, never the patch embedding (a Conv3d vLLM
cannot adapt). The learner builds its adapter from the config's preset, and trains it.
"""

from __future__ import annotations

import re

import pytest

from halo_model.lora import LORA_TARGETS, lora_config, reaches_vision, target_modules
from tests.learner_config import plain_config

# The regex the adapter was built with before the presets existed.
BEFORE = r".*\.language_model\..*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)$"


def _adapted(model_dir, target: str) -> set[str]:
    """Module names (HF, as vLLM maps them) that get a LoRA under ``target``."""
    from peft import get_peft_model

    from halo_model.loading import load_model

    model = get_peft_model(load_model(model_dir), lora_config(8, 16, target=target))
    prefix = "base_model.model."
    return {
        name.removeprefix(prefix).removesuffix(".lora_A.default.weight")
        for name, _ in model.named_parameters()
        if name.endswith("lora_A.default.weight")
    }


@pytest.fixture(scope="module")
def adapted(tiny_model_dir) -> dict[str, set[str]]:
    return {target: _adapted(tiny_model_dir, target) for target in LORA_TARGETS}


def test_language_is_the_adapter_runs_had_before(adapted, tiny_model_dir) -> None:
    assert target_modules("language") == BEFORE
    from halo_model.loading import load_model

    names = {n for n, _ in load_model(tiny_model_dir).named_modules()}
    assert adapted["language"] == {n for n in names if re.fullmatch(BEFORE, n)}
    assert adapted["language"] and not any(".visual." in n or n.startswith("model.visual") for n in adapted["language"])
    assert not reaches_vision("language")


def test_merger_adds_the_connector_and_tower_adds_every_block(adapted, tiny_model_dir) -> None:
    from halo_model.loading import load_model

    model = load_model(tiny_model_dir)
    depth = model.config.vision_config.depth
    deepstack = len(model.config.vision_config.deepstack_visual_indexes)
    language = adapted["language"]
    connector = {f"model.visual.merger.linear_fc{i}" for i in (1, 2)} | {
        f"model.visual.deepstack_merger_list.{k}.linear_fc{i}" for k in range(deepstack) for i in (1, 2)
    }
    tower = {
        f"model.visual.blocks.{b}.{layer}"
        for b in range(depth)
        for layer in ("attn.qkv", "attn.proj", "mlp.linear_fc1", "mlp.linear_fc2")
    }
    assert adapted["language+merger"] == language | connector
    assert adapted["language+tower"] == language | connector | tower
    assert all(reaches_vision(t) for t in ("language+merger", "language+tower"))
    assert not any("patch_embed" in n for n in adapted["language+tower"])
    with pytest.raises(ValueError, match="language\\+tower"):
        target_modules("tower")


def test_the_learner_trains_the_vision_lora_and_saves_it_under_the_names_vllm_maps(tiny_model_dir, tmp_path) -> None:
    import torch
    from safetensors.torch import load_file

    from halo_model.loading import load_model
    from halo_trainer.learner.learner import Learner

    learner = Learner(load_model(tiny_model_dir), plain_config(lora_r=8, lora_alpha=16, lora_target="language+tower"))
    trained = {n for n, p in learner.model.named_parameters() if p.requires_grad}
    assert any(".visual.blocks.0.attn.qkv.lora_B" in n for n in trained)
    assert any(".visual.merger.linear_fc1.lora_B" in n for n in trained)
    keys = load_file(str(learner.weights.save_adapter(tmp_path / "a") / "adapter_model.safetensors")).keys()
    assert "base_model.model.model.visual.blocks.0.attn.qkv.lora_A.weight" in keys
    assert "base_model.model.model.visual.deepstack_merger_list.0.linear_fc2.lora_B.weight" in keys
    # and a learner of the same preset reads it back
    other = Learner(load_model(tiny_model_dir), plain_config(lora_r=8, lora_alpha=16, lora_target="language+tower"))
    other.weights.load_adapter(tmp_path / "a")
    with pytest.raises(ValueError, match="does not fit"):
        Learner(load_model(tiny_model_dir), plain_config(lora_r=8, lora_alpha=16)).weights.load_adapter(tmp_path / "a")
    assert torch.equal(
        dict(other.model.named_parameters())["base_model.model.model.visual.blocks.0.attn.qkv.lora_A.default.weight"],
        dict(learner.model.named_parameters())["base_model.model.model.visual.blocks.0.attn.qkv.lora_A.default.weight"],
    )
