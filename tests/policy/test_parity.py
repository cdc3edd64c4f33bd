"""Log-prob parity: transformers (+ peft) recomputes exactly the behaviour log-probs vLLM reported.

Both sides run float32 on the CPU. Tolerance: 1e-4 absolute per token. Measured on the tiny model:
max |diff| about 1e-6 without an adapter, about 6e-6 with one (see docs/policy.md).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from halo.policy_client import PolicyClient
from halo.policy_results import SampleResult
from halo.prompts import tool_call_regex
from halo.settings.policy import PolicySettings

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.browser]

TOLERANCE = 1e-4
GOAL = "Reply to Bob that Friday works"
HISTORY = ["left_click(coordinate=[300, 180])", "type(text='Friday works')"]


@pytest.fixture(scope="module")
def processor(tiny_model_dir: Path):
    from halo_model.loading import load_processor

    return load_processor(tiny_model_dir)


def _records(result: SampleResult, png: bytes, history: list[str] = HISTORY):
    from halo_model.inputs import SampleRecord

    return [SampleRecord(GOAL, history, [png], c.token_ids, result.prompt_token_ids) for c in result.candidates]


def _max_diff(model, processor, result: SampleResult, png: bytes, *, grammar: bool) -> float:
    import torch

    from halo_model.grammar import grammar_masks
    from halo_model.inputs import build_batch
    from halo_model.logprobs import completion_logprobs

    batch = build_batch(processor, _records(result, png))
    allowed = None
    if grammar:
        cfg = model.config if hasattr(model.config, "text_config") else model.get_base_model().config
        allowed = grammar_masks(
            processor.tokenizer,
            tool_call_regex(),
            [c.token_ids for c in result.candidates],
            cfg.text_config.vocab_size,
        )
    ours = completion_logprobs(model, batch, allowed=allowed)
    worst = 0.0
    for i, c in enumerate(result.candidates):
        assert batch.completion_mask[i].sum().item() == len(c.token_ids)
        worst = max(worst, (ours[i, : len(c.token_ids)] - torch.tensor(c.logprobs)).abs().max().item())
    return worst


@pytest.mark.parametrize("mode", ["off", "regex"])
async def test_parity_without_adapter(vllm_server, tiny_model_dir, processor, screenshot_png, mode) -> None:
    from halo_model.loading import load_model

    async with PolicyClient.from_settings(vllm_server, structured_outputs=mode, max_tokens=48) as client:
        result = await client.sample_actions(screenshot_png, GOAL, HISTORY, n=4, seed=5)
    model = load_model(tiny_model_dir, dtype=vllm_server.resolved_dtype())
    diff = _max_diff(model, processor, result, screenshot_png, grammar=mode == "regex")
    print(f"parity base model, structured={mode}: max |logprob diff| = {diff:.2e}")
    assert diff < TOLERANCE


@pytest.mark.parametrize("mode", ["off", "regex"])
async def test_parity_with_adapter(
    vllm_server: PolicySettings, tiny_model_dir, processor, screenshot_png, tmp_path, mode
) -> None:
    from halo_model.loading import load_model
    from halo_model.lora import random_adapter

    adapter = random_adapter(tiny_model_dir, tmp_path / "adapter", seed=3)
    name = f"parity{uuid.uuid4().hex[:6]}-v1"
    async with PolicyClient.from_settings(vllm_server, structured_outputs=mode, max_tokens=48) as client:
        await client.publish_adapter(name, str(adapter))
        try:
            result = await client.sample_actions(screenshot_png, GOAL, HISTORY, n=4, seed=5)
            base = await client.sample_actions(screenshot_png, GOAL, HISTORY, n=4, seed=5, model=client.base_model)
        finally:
            await client.unload_adapter(name)
    assert result.model == name
    assert [c.logprobs for c in result.candidates] != [c.logprobs for c in base.candidates]
    model = load_model(tiny_model_dir, adapter, dtype=vllm_server.resolved_dtype())
    diff = _max_diff(model, processor, result, screenshot_png, grammar=mode == "regex")
    print(f"parity with LoRA adapter, structured={mode}: max |logprob diff| = {diff:.2e}")
    assert diff < TOLERANCE


async def test_a_different_prompt_is_refused(vllm_server, processor, screenshot_png) -> None:
    from halo_model.inputs import PromptMismatch, build_batch

    async with PolicyClient.from_settings(vllm_server, max_tokens=16) as client:
        result = await client.sample_actions(screenshot_png, GOAL, HISTORY, n=1, seed=1)
    with pytest.raises(PromptMismatch, match="first difference"):
        build_batch(processor, _records(result, screenshot_png, history=HISTORY[:1]))


async def test_gradients_flow_to_the_lora_weights_only(
    vllm_server, tiny_model_dir, processor, screenshot_png, tmp_path
):
    from halo_model.inputs import build_batch
    from halo_model.loading import load_model
    from halo_model.logprobs import completion_logprobs
    from halo_model.lora import random_adapter

    async with PolicyClient.from_settings(vllm_server, max_tokens=16) as client:
        result = await client.sample_actions(screenshot_png, GOAL, HISTORY, n=2, seed=2)
    adapter = random_adapter(tiny_model_dir, tmp_path / "a", seed=4)
    model = load_model(tiny_model_dir, adapter, trainable=True)
    batch = build_batch(processor, _records(result, screenshot_png))
    logp = completion_logprobs(model, batch, grad=True)
    (-(logp.sum())).backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.requires_grad}
    assert grads and all("lora_" in n for n in grads)
    assert any(g is not None and g.abs().sum() > 0 for g in grads.values())
