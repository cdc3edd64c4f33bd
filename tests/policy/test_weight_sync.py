"""Full-weight sync: new vision weights and an adapter reloaded into a running vLLM as one version.

The parity check of test_parity, after ``PolicyClient.publish_weights`` replaced the vision tower's
weights in place: vLLM's behaviour log-probs equal those transformers computes from the same
folder plus the same adapter (same tolerance), and differ from the original weights' ones, so the
reload reached the vision tower. The session's server gets its original weights back at the end.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from halo.policy_client import PolicyClient
from halo.settings.policy import PolicySettings
from tests.policy.test_parity import GOAL, HISTORY, TOLERANCE, _max_diff

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.browser]


@pytest.fixture(scope="module")
def processor(tiny_model_dir: Path):
    from halo_model.loading import load_processor

    return load_processor(tiny_model_dir)


async def test_vision_weights_reloaded_in_place_match_the_learner(
    vllm_server: PolicySettings, tiny_model_dir, processor, screenshot_png, tmp_path
) -> None:
    from halo_model.loading import load_model
    from halo_model.lora import random_adapter
    from halo_model.weight_sync import VISION_PREFIX, perturbed_weights

    adapter = random_adapter(tiny_model_dir, tmp_path / "adapter", seed=3)
    weights, changed = perturbed_weights(tiny_model_dir, tmp_path / "weights", seed=11)
    assert changed and all(n.startswith(VISION_PREFIX) for n in changed)
    old, new = (f"sync{uuid.uuid4().hex[:6]}-v{k}" for k in (1, 2))
    async with PolicyClient.from_settings(vllm_server, structured_outputs="regex", max_tokens=48) as client:
        assert await client.weight_reload_available(), "the CPU target starts vLLM with weight reload on"
        await client.publish_adapter(old, str(adapter))
        try:
            before = await client.sample_actions(screenshot_png, GOAL, HISTORY, n=4, seed=5)
            timing = await client.publish_weights(new, str(adapter), str(weights))
            served = {m["id"] for m in await client.models()}
            after = await client.sample_actions(screenshot_png, GOAL, HISTORY, n=4, seed=5)
        finally:
            await client.reload_weights(str(tiny_model_dir))
            for name in (old, new):
                await client.unload_adapter(name)
    print(f"publish_weights: {timing}")
    assert after.model == new and client.current_model == new
    assert old not in served and new in served  # an older version's name no longer samples
    # The vision tower is what changed: same adapter, same seed, different log-probs.
    assert [c.logprobs for c in after.candidates] != [c.logprobs for c in before.candidates]
    model = load_model(weights, adapter, dtype=vllm_server.resolved_dtype())
    diff = _max_diff(model, processor, after, screenshot_png, grammar=True)
    print(f"parity after a vision-weight reload: max |logprob diff| = {diff:.2e}")
    assert diff < TOLERANCE


async def test_the_original_weights_come_back(vllm_server: PolicySettings, tiny_model_dir, processor, screenshot_png):
    """After the reloads above (same session server), reloading the model's own folder restores
    the base model's log-probs: what a restarted server would serve. The same screenshot again:
    a reload outside a pause would kill the engine here (``PolicyClient._paused``)."""
    from halo_model.loading import load_model

    async with PolicyClient.from_settings(vllm_server, structured_outputs="regex", max_tokens=48) as client:
        await client.reload_weights(str(tiny_model_dir))
        result = await client.sample_actions(screenshot_png, GOAL, HISTORY, n=2, seed=7, model=client.base_model)
    model = load_model(tiny_model_dir, dtype=vllm_server.resolved_dtype())
    assert _max_diff(model, processor, result, screenshot_png, grammar=True) < TOLERANCE
