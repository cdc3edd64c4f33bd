"""A ``language+tower`` run end to end on vLLM: the learner's trained adapter serves as it scores,
and the run-start probe (``halo_trainer.checks.tower_check``) tells a server that applies vision-side LoRA
from one that drops it.

Two vLLM servers: the session's default one (no tower LoRA) for the refusal, and the package's
``tower_server``, started with ``HALO_POLICY_TOWER_LORA=true`` (the setting, not a raw flag), for
the rest. Measured figures are printed and recorded in docs/trainer.md.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from halo.policy_client import PolicyClient
from halo.policy_results import SampleResult
from halo.schemas.env import Viewport
from halo.schemas.rollout import SamplingParams
from halo.settings.policy import PolicySettings
from tests.learner_config import plain_config

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.browser]

TOLERANCE = 1e-4
GOAL = "Reply to Bob that Friday works"
# The probe's screenshot: small, so the two probe answers stay cheap on the CPU.
SAMPLING = SamplingParams(
    max_tokens=16, structured_outputs="off", history_limit=8, viewport=Viewport(width=320, height=240)
)


def _learner(model_dir: Path):
    import torch

    from halo_model.loading import load_model
    from halo_trainer.learner.learner import Learner

    torch.manual_seed(0)
    config = plain_config(lora_r=8, lora_alpha=16, lora_target="language+tower", learning_rate=1e-2, max_tokens=32)
    return Learner(load_model(model_dir, dtype="float32"), config)


@pytest.fixture(scope="module")
def learner(tiny_model_dir):
    return _learner(tiny_model_dir)


def _client(settings: PolicySettings) -> PolicyClient:
    return PolicyClient.from_settings(settings, structured_outputs="off", max_tokens=32)


def test_the_probe_refuses_a_server_without_tower_lora(vllm_server, vllm_server_log, learner, tmp_path) -> None:
    from halo_trainer.checks.prompt_check import PromptCheckFailed
    from halo_trainer.checks.tower_check import TowerLoraIgnored, check_tower_lora

    class Run:  # the two RunConfig fields the check reads
        lora_target = "language+tower"
        sampling = SAMPLING

    async def probe() -> tuple[Exception, set[str], set[str]]:
        async with _client(vllm_server) as client:
            before = {m["id"] for m in await client.models()}  # other tests' adapters may be loaded
            with pytest.raises(TowerLoraIgnored, match="HALO_POLICY_TOWER_LORA") as refused:
                await check_tower_lora(client, learner, Run, tmp_path)
            return refused.value, before, {m["id"] for m in await client.models()}

    refused, before, after = asyncio.run(probe())
    assert after <= before  # the probe's adapter unloaded
    assert isinstance(refused, PromptCheckFailed)  # runs.py fails the run as a settings problem
    assert "--enable-tower-connector-lora" in str(refused)
    assert not (tmp_path / "tower_probe").exists()
    if vllm_server_log.exists():  # not when HALO_TEST_POLICY_PORT reuses a server started elsewhere
        # vLLM's only sign, a warning per vision module when the server without the flag started
        assert "no matching PunicaWrapper" in vllm_server_log.read_text(errors="replace")


def test_the_probe_passes_a_server_with_tower_lora(tower_server, learner, tmp_path) -> None:
    from halo_trainer.checks.tower_check import check_tower_lora

    settings, _ = tower_server

    class Run:
        lora_target = "language+tower"
        sampling = SAMPLING

    async def probe() -> None:
        async with _client(settings) as client:
            await check_tower_lora(client, learner, Run, tmp_path)
            assert not {m["id"] for m in await client.models()} - {client.base_model}

    asyncio.run(probe())
    assert not (tmp_path / "tower_probe").exists()


async def _sample(settings: PolicySettings, png: bytes, model: str | None, adapter: Path | None = None) -> SampleResult:
    async with _client(settings) as client:
        name = client.base_model
        if adapter is not None:
            name = f"towerrun{uuid.uuid4().hex[:6]}-v1"
            await client.load_adapter(name, str(adapter))
        try:
            return await client.sample_actions(png, GOAL, n=4, temperature=1.0, seed=7, model=name, max_tokens=16)
        finally:
            if adapter is not None:
                await client.unload_adapter(name)


def _batch(processor, result: SampleResult, png: bytes, advantages: list[float] | None = None):
    import torch

    from halo_model.inputs import SampleRecord, build_batch
    from halo_trainer.learner.learner_batch import LearnerBatch

    records = [SampleRecord(GOAL, [], [png], c.token_ids, result.prompt_token_ids) for c in result.candidates]
    advantages = advantages or [0.0] * len(records)
    return LearnerBatch(inputs=build_batch(processor, records), advantages=torch.tensor(advantages))


def _max_diff(ours, result: SampleResult) -> float:
    import torch

    return max(
        (ours[i, : len(c.token_ids)] - torch.tensor(c.logprobs)).abs().max().item()
        for i, c in enumerate(result.candidates)
    )


def test_a_trained_tower_adapter_serves_as_the_learner_scores(
    tower_server, learner, tiny_model_dir, screenshot_png, tmp_path
) -> None:
    import torch

    from halo_model.loading import load_processor

    settings, log_path = tower_server
    processor = load_processor(tiny_model_dir)
    base = asyncio.run(_sample(settings, screenshot_png, None))
    metrics = learner.update(_batch(processor, base, screenshot_png, [1.0, -1.0, 0.5, -0.5]))
    trained = dict(learner.model.named_parameters())
    vision_b = {n: p for n, p in trained.items() if ".visual." in n and "lora_B" in n}
    moved = {n for n, p in vision_b.items() if p.abs().max() > 0}
    # The tiny model adds its last deepstack merger's features after its last decoder layer, where
    # only image positions see them: no gradient reaches that merger (docs/policy.md).
    last = f"deepstack_merger_list.{len(learner.model.get_base_model().model.visual.deepstack_merger_list) - 1}."
    assert moved == {n for n in vision_b if last not in n}, sorted(set(vision_b) - moved)
    assert any(".visual.blocks." in n for n in moved) and any(".visual.merger." in n for n in moved)
    print(f"one update: {metrics.get('train/grad_norm')=}, vision lora_B tensors moved: {len(moved)}/{len(vision_b)}")

    served = asyncio.run(_sample(settings, screenshot_png, None, learner.weights.save_adapter(tmp_path / "adapter")))
    batch = _batch(processor, served, screenshot_png)
    with torch.no_grad():
        ours = learner.logprobs(batch)
        # The same adapter with its vision side zeroed: what a server that drops those keys serves.
        saved = {n: p.detach().clone() for n, p in trained.items() if ".visual." in n and "lora_B" in n}
        for n in saved:
            trained[n].zero_()
        language_only = learner.logprobs(batch)
        for n, value in saved.items():
            trained[n].copy_(value)
    diff = _max_diff(ours.cpu(), served)
    off_vision = _max_diff(language_only.cpu(), served)
    print(f"language+tower adapter after one update: max |logprob diff| learner vs vLLM = {diff:.2e}")
    print(f"  vs the same adapter without its vision side: {off_vision:.2e}")
    assert diff < TOLERANCE
    assert off_vision > 10 * TOLERANCE, "vLLM served the adapter as if its vision side were absent"
    assert "no matching PunicaWrapper" not in log_path.read_text(errors="replace")
