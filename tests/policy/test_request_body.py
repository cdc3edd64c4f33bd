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
