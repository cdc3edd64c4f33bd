"""The OpenAI-compatible client against a stdlib stand-in that records what it was sent.

What could go wrong and is checked here: the request (route, key, model, sampling parameters, the
policy's own prompt with the screenshot inlined), the parsing of the answer into an action or a
parse error, and the errors (a refused key, an answer without choices, no key at all).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from halo.actions import format_tool_call
from halo.openai_client import OpenAIChatClient, OpenAIDisabled
from halo.schemas import Action
from halo.settings.eval import EvalSettings
from halo.transport import ServiceFailed, ServiceRejected
from tests.http_stub import QuietHandler, ServedInThread
from tests.policy.test_client_errors import PNG_1x1

CLICK = Action(action="left_click", coordinate=(120, 340))


@dataclass
class Recorder:
    status: int = 200
    answer: Any = None
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def api() -> Iterator[tuple[str, Recorder]]:
    rec = Recorder()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            rec.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": json.loads(raw)})
            self.send_json(rec.status, json.dumps(rec.answer).encode())

    with ServedInThread(Handler) as served:
        yield served.url + "/v1", rec


def _completion(content: str | None) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


async def test_sends_the_policy_prompt_with_the_screenshot_and_parses_the_action(api: tuple[str, Recorder]) -> None:
    url, rec = api
    rec.answer = _completion(format_tool_call(CLICK))
    async with OpenAIChatClient("sk-test", "gpt-test", base_url=url, history_limit=1) as client:
        candidate = await client.sample_action(
            PNG_1x1, "Buy the red shoes", ["scroll(pixels=300)", CLICK], max_tokens=77
        )

    assert candidate.action == CLICK and candidate.parse_error is None
    assert candidate.token_ids == [] and candidate.logprobs == []
    (sent,) = rec.requests
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer sk-test"
    body = sent["body"]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-test", 0.0, 77)
    system, user = body["messages"]
    assert system["role"] == "system" and '"name": "computer_use"' in system["content"][0]["text"]
    texts = [p["text"] for p in user["content"] if p["type"] == "text"]
    images = [p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url"]
    assert any("Buy the red shoes" in t for t in texts)
    assert not any("scroll" in t for t in texts)  # history_limit=1: only the last action is listed
    assert images == ["data:image/png;base64," + base64.b64encode(PNG_1x1).decode()]


async def test_an_answer_that_is_not_an_action_is_a_parse_error(api: tuple[str, Recorder]) -> None:
    url, rec = api
    rec.answer = _completion("I would click the button.")
    async with OpenAIChatClient("sk-test", "gpt-test", base_url=url) as client:
        candidate = await client.sample_action(PNG_1x1, "goal")
        assert await client.chat([{"role": "user", "content": "hi"}], max_tokens=5) == "I would click the button."
    assert candidate.action is None and candidate.parse_error is not None
    assert candidate.text == "I would click the button."
    assert rec.requests[-1]["body"]["messages"] == [{"role": "user", "content": "hi"}]


async def test_a_refused_key_is_rejected_once_and_a_bad_answer_is_a_failure(api: tuple[str, Recorder]) -> None:
    url, rec = api
    rec.status, rec.answer = 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
    async with OpenAIChatClient("sk-wrong", "gpt-test", base_url=url, backoff_s=0.01) as client:
        with pytest.raises(ServiceRejected, match="answered 401: Incorrect API key provided") as info:
            await client.chat([{"role": "user", "content": "hi"}])
        assert info.value.status == 401 and len(rec.requests) == 1

        rec.status, rec.answer = 200, {"object": "list", "data": []}
        with pytest.raises(ServiceFailed, match="without choices"):
            await client.chat([{"role": "user", "content": "hi"}])


async def test_is_disabled_without_a_key() -> None:
    client = OpenAIChatClient.from_settings(EvalSettings(openai_api_key=""), "gpt-test")
    assert not client.enabled
    with pytest.raises(OpenAIDisabled, match="OPENAI_API_KEY"):
        await client.chat([{"role": "user", "content": "hi"}])
    await client.aclose()
