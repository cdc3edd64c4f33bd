"""A LoRA on the vision tower and merger, served by vLLM, scores like the learner's PEFT model.

vLLM 0.32's Qwen3-VL applies LoRA to ``visual.*`` modules only when started with
``--enable-tower-connector-lora`` (what ``HALO_POLICY_TOWER_LORA=true`` passes; the package's
``tower_server``); without it those keys are dropped (a warning per module at
start-up, none when an adapter is loaded) and the served policy silently differs from the trained
one. Here a server with the flag samples a screenshot under the base model, a language + vision
adapter and a vision-only adapter, all in flight together (so the vision encoder may batch images
of different adapters), and the learner recomputes every log-prob in float32. A vision-only
adapter must change what vLLM reports; on the default server (no flag) it must not, which fails
as soon as vLLM starts applying tower LoRA by default (then docs/policy.md needs updating).
Measured figures are printed and recorded in docs/policy.md.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from halo.policy_client import PolicyClient
from halo.policy_results import SampleResult
from halo.settings.policy import PolicySettings

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.browser]

TOLERANCE = 1e-4
# Far above float rounding: an adapter vLLM ignored would leave its log-probs at the base model's.
APPLIED = 0.1
GOAL = "Reply to Bob that Friday works"
HISTORY = ["left_click(coordinate=[300, 180])", "type(text='Friday works')"]
TOWER_FLAG = "--enable-tower-connector-lora"

LANGUAGE_TARGETS = r".*\.language_model\..*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
# Every linear layer of the vision side: the ViT blocks (vLLM's "tower") and the patch merger plus
# the deepstack mergers (its "connector"). The patch embedding is a Conv3d, which vLLM cannot adapt.
VISION_TARGETS = (
    r".*\.visual\.(blocks\.\d+\.(attn\.(qkv|proj)|mlp\.linear_fc[12])"
    r"|merger\.linear_fc[12]|deepstack_merger_list\.\d+\.linear_fc[12])"
)


def _adapter(model_dir: Path, out: Path, targets: str, seed: int, scale: float = 0.5) -> Path:
    """A saved PEFT adapter on ``targets`` with random A and B (PEFT's zero B would be a no-op)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from halo_model.loading import load_model

    config = LoraConfig(r=8, lora_alpha=16, target_modules=targets + "$", lora_dropout=0.0, bias="none")
    model = get_peft_model(load_model(model_dir), config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * scale)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def adapters(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("tower-adapters")
    return {
        "both": _adapter(tiny_model_dir, out / "both", f"({LANGUAGE_TARGETS}|{VISION_TARGETS})", seed=3),
        "vision": _adapter(tiny_model_dir, out / "vision", VISION_TARGETS, seed=4),
    }


async def _sample_all(settings: PolicySettings, png: bytes, adapters: dict[str, Path]) -> dict[str, SampleResult]:
    """One request per model, sent together; keys: ``base`` and those of ``adapters``."""
    tag = uuid.uuid4().hex[:6]
    async with PolicyClient.from_settings(settings, structured_outputs="off", max_tokens=48) as client:
        names = {"base": client.base_model}
        for key, path in adapters.items():
            names[key] = f"tower{tag}{key}-v1"
            await client.load_adapter(names[key], str(path))
        try:
            results = await asyncio.gather(
                *(client.sample_actions(png, GOAL, HISTORY, n=4, seed=5, model=name) for name in names.values())
            )
        finally:
            for key in adapters:
                await client.unload_adapter(names[key])
    return dict(zip(names, results, strict=True))


def _max_diff(model, processor, result: SampleResult, png: bytes) -> float:
    import torch

    from halo_model.inputs import SampleRecord, build_batch
    from halo_model.logprobs import completion_logprobs

    records = [SampleRecord(GOAL, HISTORY, [png], c.token_ids, result.prompt_token_ids) for c in result.candidates]
    ours = completion_logprobs(model, build_batch(processor, records))
    return max(
        (ours[i, : len(c.token_ids)] - torch.tensor(c.logprobs)).abs().max().item()
        for i, c in enumerate(result.candidates)
    )


async def test_tower_and_merger_lora_match_the_learner(tower_server, adapters, tiny_model_dir, screenshot_png):
    from halo_model.loading import load_model, load_processor

    settings, log_path = tower_server
    results = await _sample_all(settings, screenshot_png, adapters)
    processor = load_processor(tiny_model_dir)
    base = load_model(tiny_model_dir, dtype=settings.resolved_dtype())
    diffs = {"base": _max_diff(base, processor, results["base"], screenshot_png)}
    for key, path in adapters.items():
        model = load_model(tiny_model_dir, path, dtype=settings.resolved_dtype())
        diffs[key] = _max_diff(model, processor, results[key], screenshot_png)
        off_base = _max_diff(base, processor, results[key], screenshot_png)
        print(f"{TOWER_FLAG}, adapter {key}: max |logprob diff| = {diffs[key]:.2e} (vs the base model: {off_base:.2f})")
        assert off_base > APPLIED, f"vLLM served adapter {key!r} as if it were the base model"
    print(f"{TOWER_FLAG}, base model: max |logprob diff| = {diffs['base']:.2e}")
    assert all(diff < TOLERANCE for diff in diffs.values()), diffs
    assert "no matching PunicaWrapper" not in log_path.read_text(errors="replace")


async def test_without_the_flag_vision_lora_is_dropped(vllm_server, adapters, tiny_model_dir, screenshot_png):
    from halo_model.loading import load_model, load_processor

    results = await _sample_all(vllm_server, screenshot_png, {"vision": adapters["vision"]})
    base = load_model(tiny_model_dir, dtype=vllm_server.resolved_dtype())
    diff = _max_diff(base, load_processor(tiny_model_dir), results["vision"], screenshot_png)
    print(f"default server, vision-only adapter vs the base model: max |logprob diff| = {diff:.2e}")
    assert diff < TOLERANCE
