"""The service clients never reuse a keep-alive connection the server may be closing.

uvicorn (our services, and vLLM's API server) closes a keep-alive connection after 5 s idle. A
client that kept it longer could send a request just as the server closes it and get an empty
ReadError: on a non-retried call such as POST /sessions that loses a rollout job.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from fastapi import FastAPI, Request

from halo.clients import EnvClient
from halo.policy_client import PolicyClient
from halo.transport import KEEPALIVE_EXPIRY_S
from tests.conftest import free_port

SERVER_KEEPALIVE_S = 5  # uvicorn's default, and vLLM's
PAUSE_S = 3.0  # a pause the server tolerates but the client must not: the risky window


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[int]]]:
    peers: list[int] = []  # the client-side port of each request: a new port is a new connection
    app = FastAPI()

    @app.get("/tasks")  # what EnvClient.tasks() asks
    @app.get("/health")  # what PolicyClient.health() asks
    def answer(request: Request) -> list:
        assert request.client is not None
        peers.append(request.client.port)
        return []

    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_keep_alive=SERVER_KEEPALIVE_S
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started
    yield f"http://127.0.0.1:{port}", peers
    srv.should_exit = True
    thread.join(5)


def test_expiry_is_inside_the_servers_keepalive() -> None:
    assert KEEPALIVE_EXPIRY_S < PAUSE_S < SERVER_KEEPALIVE_S


async def test_env_client_reconnects_after_an_idle_pause(server: tuple[str, list[int]]) -> None:
    url, peers = server
    peers.clear()
    async with EnvClient(url) as client:
        await client.tasks()
        await client.tasks()  # back to back: the pooled connection is reused
        await asyncio.sleep(PAUSE_S)
        await client.tasks()  # after a pause: a fresh connection, not one the server may be closing
    assert peers[0] == peers[1] and peers[2] != peers[1]


async def test_policy_client_reconnects_after_an_idle_pause(server: tuple[str, list[int]]) -> None:
    url, peers = server
    peers.clear()
    async with PolicyClient(url, "halo-base", max_retries=0, backoff_s=0.01) as client:
        await client.health()
        await client.health()
        await asyncio.sleep(PAUSE_S)
        await client.health()
    assert peers[0] == peers[1] and peers[2] != peers[1]
