"""Error mapping of the policy client: server down, dead engine, unknown model, timeout, bad request."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from halo.policy_client import PolicyClient
from halo.policy_errors import EngineDead
from halo.settings.policy import PolicySettings
from halo.transport import NotFound, ServiceFailed, ServiceRejected, ServiceTimeout, ServiceUnavailable
from tests.conftest import free_port
from tests.http_stub import QuietHandler, ServedInThread

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8ffff3f0005fe02fe"
    "a7d6a4a30000000049454e44ae426082"
)


async def test_server_down_is_unavailable_with_a_clear_message() -> None:
    port = free_port()  # nothing listens here
    async with PolicyClient(f"http://127.0.0.1:{port}", "halo-base", max_retries=2, backoff_s=0.01) as client:
        with pytest.raises(ServiceUnavailable, match=r"not reachable.*python -m halo_policy"):
            await client.sample_actions(PNG_1x1, "goal", n=1)
        with pytest.raises(ServiceUnavailable):
            await client.health()


class _DeadEngine(QuietHandler):
    """What vLLM's API server answers once its engine process has died: 503 on /health, 500 else."""

    def do_GET(self) -> None:
        self.send_response(503)
        self.end_headers()

    def do_POST(self) -> None:
        body = b'{"error": {"message": "EngineCore encountered an issue", "type": "InternalServerError", "code": 500}}'
        self.send_json(500, body)


@pytest.fixture
def dead_engine_url() -> Iterator[str]:
    with ServedInThread(_DeadEngine) as served:
        yield served.url


async def test_dead_engine_is_reported_as_such(dead_engine_url: str) -> None:
    async with PolicyClient(dead_engine_url, "halo-base", max_retries=0) as client:
        with pytest.raises(EngineDead, match="engine is dead"):
            await client.health()
        with pytest.raises(EngineDead, match="EngineCore encountered an issue"):
            await client.sample_actions(PNG_1x1, "goal", n=1)


# vLLM 0.32's answer to a request whose image its engine process no longer holds (tests/policy/
# test_image_cache_drift.py makes that happen with the real server).
_DRIFT_500 = (
    b'{"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}}'
)


class _DriftOnce(QuietHandler):
    """A 500 on the first ``failures`` chat requests, then an answer; ``/health`` is fine."""

    failures = 1
    posts = 0

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).posts += 1
        failing = type(self).posts <= type(self).failures
        body = _DRIFT_500 if failing else b'{"model": "halo-base", "choices": [{"message": {"content": "ok"}}]}'
        self.send_json(500 if failing else 200, body)


@pytest.mark.parametrize("failures", [1, 2])
async def test_a_500_is_sent_once_more_and_only_once(failures: int) -> None:
    """vLLM's recovery from its image caches drifting is the client's second send; a 500 that
    comes back again is raised, not retried further (the 5xx retries are for 502-504)."""
    handler = type("Handler", (_DriftOnce,), {"failures": failures, "posts": 0})
    with ServedInThread(handler) as served:
        async with PolicyClient(served.url, "halo-base", max_retries=3, backoff_s=0.01) as client:
            if failures == 1:
                assert await client.complete([{"role": "user", "content": "hi"}], max_tokens=2) == "ok"
            else:
                with pytest.raises(ServiceFailed, match="answered 500: Internal server error"):
                    await client.complete([{"role": "user", "content": "hi"}], max_tokens=2)
    assert handler.posts == 2


@pytest.mark.slow
@pytest.mark.vllm
async def test_unknown_model_is_model_not_found(vllm_server: PolicySettings) -> None:
    async with PolicyClient.from_settings(vllm_server) as client:
        with pytest.raises(NotFound, match="does not exist"):
            await client.sample_actions(PNG_1x1, "goal", n=1, model="no-such-adapter-v9")


@pytest.mark.slow
@pytest.mark.vllm
async def test_timeout_is_policy_timeout(vllm_server: PolicySettings) -> None:
    # No grammar: the random tiny model writes up to 200 tokens x 8, seconds on a CPU. Under the
    # cpu target's regex grammar an answer ends after ~20 tokens, and on a loaded machine the
    # client's event loop could wake after the whole answer had arrived (seen once at load ~10).
    async with PolicyClient.from_settings(
        vllm_server, structured_outputs="off", timeout_s=0.001, max_retries=1, backoff_s=0.01
    ) as client:
        with pytest.raises(ServiceTimeout, match="timed out"):
            await client.sample_actions(PNG_1x1, "goal", n=8, max_tokens=200)


@pytest.mark.slow
@pytest.mark.vllm
async def test_bad_request_is_not_retried(vllm_server: PolicySettings) -> None:
    async with PolicyClient.from_settings(vllm_server, max_tokens=10**6) as client:
        with pytest.raises(ServiceRejected) as info:
            await client.sample_actions(PNG_1x1, "goal", n=1)
        assert info.value.status == 400
