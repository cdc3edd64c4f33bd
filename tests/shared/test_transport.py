"""One transport under the env, reward and policy clients: one error hierarchy, one retry rule.

A stdlib HTTP stand-in answers a scripted sequence of statuses and records every request, so each
test sees how many times a call went out and what came back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from halo.clients import EnvClient, RewardClient
from halo.policy_client import PolicyClient
from halo.schemas import Action, RewardRequest, StateSummary
from halo.transport import (
    CallError,
    NotFound,
    ServiceFailed,
    ServiceRejected,
    ServiceTimeout,
    ServiceUnavailable,
    Transport,
)
from tests.conftest import free_port
from tests.http_stub import QuietHandler, ServedInThread


@dataclass
class Script:
    """What the stand-in answers, in order (the last answer repeats), and what it was asked."""

    answers: list[tuple[int, object]] = field(default_factory=lambda: [(200, {})])
    delay_s: float = 0.0
    seen: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, method: str, path: str) -> tuple[int, object]:
        with self.lock:
            self.seen.append((method, path))
            return self.answers[min(len(self.seen), len(self.answers)) - 1]


@pytest.fixture
def stub() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(QuietHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            status, body = script.next(self.command, self.path)
            time.sleep(script.delay_s)
            self.send_json(status, body if isinstance(body, bytes) else json.dumps(body).encode())

        do_GET = do_POST = do_DELETE = _answer

    with ServedInThread(Handler) as served:
        yield served.url, script


async def test_an_idempotent_call_is_retried_on_a_gateway_error(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(503, {"error": "busy"}), (502, {"error": "busy"}), (200, {"ok": True})]
    async with _transport(url, max_retries=2) as http:
        response = await http.request("GET", "/x")
    assert response.json() == {"ok": True} and len(script.seen) == 3


async def test_a_call_that_is_not_idempotent_goes_out_once(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(503, {"error": "no browser context is free"}), (200, {})]
    async with _transport(url, max_retries=3) as http:
        with pytest.raises(ServiceFailed, match="answered 503: no browser context is free") as info:
            await http.request("POST", "/sessions", retry=False)
    assert info.value.status == 503 and info.value.service == "thing"
    assert len(script.seen) == 1


async def test_retries_run_out_and_the_last_error_is_raised(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(504, {"error": "gateway"})]
    async with _transport(url, max_retries=2) as http:
        with pytest.raises(ServiceFailed) as info:
            await http.request("GET", "/x")
    assert info.value.status == 504 and len(script.seen) == 3


@pytest.mark.parametrize(
    ("status", "body", "error", "message"),
    [
        (500, {"error": {"message": "EngineCore encountered an issue", "code": 500}}, ServiceFailed, "EngineCore"),
        (404, {"error": "unknown session 'abc'"}, NotFound, "unknown session 'abc'"),
        (404, {"detail": "Not Found"}, NotFound, "Not Found"),
        (422, {"error": "invalid request: domain"}, ServiceRejected, "invalid request: domain"),
        (400, b"plain text, not JSON", ServiceRejected, "plain text, not JSON"),
    ],
)
async def test_a_status_maps_to_its_error_and_is_sent_once(
    stub: tuple[str, Script], status: int, body: object, error: type[CallError], message: str
) -> None:
    url, script = stub
    script.answers = [(status, body), (200, {})]
    async with _transport(url, max_retries=3) as http:
        with pytest.raises(error, match=message) as info:
            await http.request("GET", "/x")
    assert type(info.value) is error and info.value.status == status
    assert len(script.seen) == 1  # 500 and 4xx are not transient: never repeated


async def test_nothing_listening_is_unavailable_and_names_how_to_start_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with _transport(url, max_retries=1, start_hint="python -m halo_thing") as http:
        with pytest.raises(ServiceUnavailable, match=r"thing at .* is not reachable.*python -m halo_thing") as info:
            await http.request("GET", "/x")
    assert not isinstance(info.value, ServiceTimeout) and info.value.status is None


async def test_no_answer_in_time_is_a_timeout_and_is_retried(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.delay_s = 1.0
    async with _transport(url, max_retries=1) as http:
        with pytest.raises(ServiceTimeout, match="GET /slow timed out"):
            await http.request("GET", "/slow", timeout_s=0.2)
    assert len(script.seen) == 2


async def test_the_env_reward_and_policy_clients_share_the_rule(stub: tuple[str, Script]) -> None:
    """Stepping a page is sent once; scoring a transition (idempotent by id) and listing models are retried."""
    url, script = stub
    script.answers = [(503, {"error": "busy"})]
    async with EnvClient(url, max_retries=2) as env:
        with pytest.raises(ServiceFailed, match="env at"):
            await env.step("s1", Action(action="wait", time=1.0))
    assert script.seen == [("POST", "/sessions/s1/step")]

    script.seen.clear()
    state = StateSummary(url="http://127.0.0.1/")
    request = RewardRequest(
        transition_id="t1",
        run_id="r",
        episode_id="e",
        task_id="local.playground.1",
        domain="playground",
        step=0,
        prev=state,
        next=state,
    )
    async with RewardClient(url, max_retries=2) as reward:
        with pytest.raises(ServiceFailed, match="reward at"):
            await reward.reward(request)
    assert script.seen == [("POST", "/reward")] * 3

    script.seen.clear()
    async with PolicyClient(url, "base", max_retries=2, backoff_s=0.01) as policy:
        with pytest.raises(ServiceFailed, match="policy server at"):
            await policy.models()
    assert script.seen == [("GET", "/v1/models")] * 3


async def test_closing_a_session_that_is_gone_is_fine(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(404, {"error": "unknown session 's1'"}), (409, {"error": "busy"})]
    async with EnvClient(url) as env:
        await env.close("s1")
        with pytest.raises(ServiceRejected, match="busy"):
            await env.close("s1")


def _transport(url: str, *, max_retries: int, start_hint: str = "") -> Transport:
    return Transport("thing", url, max_retries=max_retries, backoff_s=0.01, start_hint=start_hint)
