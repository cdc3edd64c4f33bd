"""The trainer's /ready: its dependency probes reuse one HTTP client instead of making one per check.

Making an httpx client loads the CA bundle synchronously (measured 0.5 s on the loaded 2-core
development machine), on the event loop: with a client per check, each /ready stalled every other
route of the trainer, /health included, and a stack probe judged a busy trainer dead.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from halo.settings.trainer import TrainerSettings
from halo_trainer.api.app import create_app
from tests.http_stub import OkHandler, ServedInThread


@pytest.fixture
def dependency() -> Iterator[str]:
    """Stands in for env, reward and vLLM: answers 200 to their readiness routes."""

    with ServedInThread(OkHandler) as server:
        yield server.url


async def test_ready_makes_no_http_client_per_call(dependency: str, redis_url: str, monkeypatch) -> None:
    settings = TrainerSettings(env_url=dependency, reward_url=dependency, policy_url=dependency, redis_url=redis_url)
    app = create_app(settings)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer")
    made: list[int] = []
    real_init = httpx.AsyncClient.__init__

    def counting_init(self: httpx.AsyncClient, *args: object, **kwargs: object) -> None:
        made.append(1)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "__init__", counting_init)
    try:
        for _ in range(3):
            response = await client.get("/ready")
            assert response.status_code == 200, response.text
            assert response.json()["checks"] == {"redis": "ok", "env": "ok", "reward": "ok", "policy": "ok"}
        health = (await client.get("/health")).json()
        assert health["service"] == "trainer" and isinstance(health["pid"], int)
    finally:
        await client.aclose()
    assert made == []
