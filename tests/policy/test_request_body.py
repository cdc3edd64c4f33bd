"""The chat request the policy client sends: a run's SamplingParams replace the client's defaults."""

from __future__ import annotations

from halo.policy_client import PolicyClient
from halo.prompts import tool_call_regex
from halo.schemas import SamplingParams, Viewport


def _system(body: dict) -> str:
    return body["messages"][0]["content"][0]["text"]


def test_a_runs_sampling_params_replace_the_client_defaults():
    client = PolicyClient("http://127.0.0.1:1", "halo-base")  # defaults: no grammar, 256 tokens, 1280x720
    history = [f"step {i}" for i in range(10)]
    default = client.request_body([b"png"], "goal", history, n=2, temperature=1.0, seed=1, model="halo-base")
    assert "structured_outputs" not in default and default["max_tokens"] == 256
    run = SamplingParams(
        max_tokens=64, structured_outputs="regex", history_limit=2, viewport=Viewport(width=1024, height=768)
    )
    body = client.request_body([b"png"], "goal", history, n=2, temperature=1.0, seed=1, model="halo-base", sampling=run)
    assert body["structured_outputs"] == {"regex": tool_call_regex()} and body["max_tokens"] == 64
    assert "1024" in _system(body) and "1024" not in _system(default)
    text = str(body["messages"][1:])
    assert "step 9" in text and "step 7" not in text  # the last 2 actions only
    assert "step 7" in str(default["messages"][1:])


def test_every_sampling_field_but_the_temperature_is_sent_neutral():
    import pytest

    from halo.policy_client import NEUTRAL_SAMPLING

    client = PolicyClient("http://127.0.0.1:1", "halo-base")
    body = client.request_body([b"png"], "goal", [], n=2, temperature=0.7, seed=1, model="halo-base")
    assert body["temperature"] == 0.7
    # vLLM's values that leave the distribution alone (vllm.SamplingParams: top_k 0 = off)
    expected = {"top_p": 1.0, "top_k": 0, "min_p": 0.0}
    expected |= {"presence_penalty": 0.0, "frequency_penalty": 0.0, "repetition_penalty": 1.0}
    assert expected == NEUTRAL_SAMPLING
    assert {k: body[k] for k in NEUTRAL_SAMPLING} == expected
    extra = {"min_tokens": 5, "ignore_eos": True}
    assert (
        client.request_body([b"png"], "g", [], n=1, temperature=1.0, seed=None, model="m", extra_body=extra)[
            "min_tokens"
        ]
        == 5
    )
    for field in ("top_k", "top_p", "presence_penalty", "temperature"):
        with pytest.raises(ValueError, match=field):
            client.request_body([b"png"], "g", [], n=1, temperature=1.0, seed=None, model="m", extra_body={field: 1})
