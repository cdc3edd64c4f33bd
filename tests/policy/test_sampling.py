"""Sampling n candidate actions from the real vLLM server (CPU) for a real 1280x720 screenshot."""

from __future__ import annotations

import pytest

from halo.openai_client import OpenAIChatClient
from halo.policy_client import PolicyClient
from halo.settings.policy import PolicySettings

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


@pytest.mark.browser
async def test_n8_candidates_with_token_ids_and_logprobs(vllm_server: PolicySettings, screenshot_png: bytes) -> None:
    import io

    from PIL import Image

    assert Image.open(io.BytesIO(screenshot_png)).size == (1280, 720)
    async with PolicyClient.from_settings(vllm_server) as client:
        result = await client.sample_actions(
            screenshot_png, "Send an email to alice@example.com", ["left_click(coordinate=[50, 80])"], n=8, seed=7
        )
    assert result.model == vllm_server.served_model_name
    assert len(result.candidates) == 8
    assert len(result.prompt_token_ids) > 100
    for c in result.candidates:
        assert c.token_ids and len(c.logprobs) == len(c.token_ids)
        assert all(lp <= 0.0 for lp in c.logprobs)
        # the tiny model answers under the regex constraint: every candidate is an executable action
        assert c.action is not None, c.parse_error
        assert c.text.startswith("<tool_call>\n")
    assert len({tuple(c.token_ids) for c in result.candidates}) > 1  # seeds differ per sample


@pytest.mark.browser
async def test_same_seed_same_samples_and_greedy_is_deterministic(
    vllm_server: PolicySettings, screenshot_png: bytes
) -> None:
    async with PolicyClient.from_settings(vllm_server) as client:
        a = await client.sample_actions(screenshot_png, "Open the inbox", n=4, seed=11)
        b = await client.sample_actions(screenshot_png, "Open the inbox", n=4, seed=11)
        g1, ids1 = await client.sample_single(screenshot_png, "Open the inbox")
        g2, ids2 = await client.sample_single(screenshot_png, "Open the inbox")
    assert [c.token_ids for c in a.candidates] == [c.token_ids for c in b.candidates]
    assert g1.token_ids == g2.token_ids and ids1 == ids2 == a.prompt_token_ids


async def test_unconstrained_answers_come_back_with_parse_errors(vllm_server: PolicySettings) -> None:
    """Without structured outputs the random model writes garbage: data, not an exception."""
    from tests.policy.test_client_errors import PNG_1x1

    async with PolicyClient.from_settings(vllm_server, structured_outputs="off", max_tokens=24) as client:
        result = await client.sample_actions(PNG_1x1, "goal", n=4, seed=1)
    assert all(c.parse_error is not None and c.action is None for c in result.candidates)


@pytest.mark.browser
async def test_openai_client_gets_the_policys_greedy_answer_from_vllm(
    vllm_server: PolicySettings, screenshot_png: bytes
) -> None:
    """The gpt-baseline client sends the policy's prompt: against vLLM's OpenAI-compatible API its
    greedy answer is token for token the policy client's (the request details are tested against a
    recording stand-in in tests/shared/test_openai_client.py)."""
    goal, history = "Open the inbox", ["left_click(coordinate=[50, 80])"]
    async with PolicyClient.from_settings(vllm_server, structured_outputs="off", max_tokens=12) as policy:
        greedy, _ = await policy.sample_single(screenshot_png, goal, history)
    openai = OpenAIChatClient("local-key", vllm_server.served_model_name, base_url=vllm_server.base_url + "/v1")
    async with openai:
        candidate = await openai.sample_action(screenshot_png, goal, history, max_tokens=12)
    assert greedy.text and candidate.text == greedy.text
    assert (candidate.action, candidate.parse_error) == (greedy.action, greedy.parse_error)


@pytest.mark.browser
async def test_a_prompt_without_the_tool_description_is_rebuilt_by_the_learner(
    vllm_server: PolicySettings, screenshot_png: bytes, tiny_model_dir
) -> None:
    """``describe_tools`` false: vLLM tokenises the role line alone as the system turn, the learner
    rebuilds those very ids from the same sampling params, and a rebuild with the description is
    refused (the two sides must agree on the knob, not only on the screenshot)."""
    from halo.schemas.env import Viewport
    from halo.schemas.rollout import SamplingParams
    from halo_model.inputs import PromptMismatch, SampleRecord, build_batch
    from halo_model.loading import load_processor

    def params(describe: bool) -> SamplingParams:
        return SamplingParams(
            max_tokens=32, structured_outputs="regex", history_limit=8, describe_tools=describe, viewport=Viewport()
        )

    async with PolicyClient.from_settings(vllm_server) as client:
        short = await client.sample_actions(screenshot_png, "Open the inbox", n=2, seed=3, sampling=params(False))
        full = await client.sample_actions(screenshot_png, "Open the inbox", n=2, seed=3, sampling=params(True))
    assert len(full.prompt_token_ids) - len(short.prompt_token_ids) > 500  # the tool block is most of the prompt
    processor = load_processor(tiny_model_dir)
    record = SampleRecord("Open the inbox", [], [screenshot_png], short.candidates[0].token_ids, short.prompt_token_ids)
    batch = build_batch(processor, [record], describe_tools=False)
    assert batch.prompt_lengths == [len(short.prompt_token_ids)]
    with pytest.raises(PromptMismatch):
        build_batch(processor, [record])
