"""halo.service.BodyGuard against a real uvicorn server: size limits that hold for chunked bodies,
and lone UTF-16 surrogates refused with a 422 naming the field, on one kept-alive connection."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

from halo.service import install_error_handlers, lone_surrogate_field
from tests.conftest import free_port

LIMIT = 1_000_000
JSON = {"content-type": "application/json"}


class Body(BaseModel):
    goal: str
    state: dict = {}


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    app = FastAPI()
    install_error_handlers(app, max_body_bytes=LIMIT)

    @app.post("/echo")
    async def echo(body: Body) -> dict:
        return {"goal_chars": len(body.goal), "state": body.state}

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def _chunked(total: int, chunk: int = 64 * 1024) -> Iterator[bytes]:
    yield b'{"goal": "'
    for _ in range(total // chunk):
        yield b"a" * chunk
    yield b'"}'


def test_chunked_oversize_body_is_413_and_the_connection_stays_usable(base: str) -> None:
    with httpx.Client(base_url=base, timeout=30) as client:
        r = client.post("/echo", content=_chunked(40 * LIMIT), headers=JSON)
        assert r.status_code == 413, r.text
        assert "exceeds" in r.json()["error"] and r.json()["kind"] == "client"
        # The same client (kept-alive pool) goes on working.
        assert client.post("/echo", json={"goal": "ok"}).json()["goal_chars"] == 2


def test_chunked_body_under_the_limit_is_served(base: str) -> None:
    r = httpx.post(f"{base}/echo", content=_chunked(LIMIT // 2), headers=JSON, timeout=30)
    assert r.status_code == 200 and r.json()["goal_chars"] == (LIMIT // 2) // (64 * 1024) * 64 * 1024


def test_content_length_oversize_body_is_413(base: str) -> None:
    r = httpx.post(f"{base}/echo", content=b'{"goal": "' + b"a" * (3 * LIMIT) + b'"}', headers=JSON, timeout=30)
    assert r.status_code == 413 and str(3 * LIMIT + 12) in r.json()["error"]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"goal": "\\ud800"}', "goal"),
        (b'{"goal": "x\\udfffy"}', "goal"),
        (b'{"goal": "\\ude00\\ud83d"}', "goal"),  # a pair in the wrong order is two lone halves
        (b'{"goal": "ok", "state": {"a": [1, {"k": "\\ud83d"}]}}', "state.a.1.k"),
        (b'{"goal": "ok", "state": {"\\udc00": 1}}', "state.\\udc00"),
        (b'{"goal": "\xed\xa0\x80"}', "goal"),  # UTF-8-encoded surrogate (invalid UTF-8)
        (json.dumps({"goal": "\ud800"}).encode("utf-16-le", "surrogatepass"), "goal"),  # a UTF-16 body
    ],
)
def test_lone_surrogate_is_422_naming_the_field(base: str, raw: bytes, field: str) -> None:
    with httpx.Client(base_url=base, timeout=10) as client:
        r = client.post("/echo", content=raw, headers=JSON)
        assert r.status_code == 422, r.text
        body = r.json()
        assert body["detail"][0]["field"] == field and "surrogate" in body["error"]
        assert client.post("/echo", json={"goal": "ok"}).status_code == 200  # no reset connection


def test_valid_pairs_and_escaped_backslashes_pass(base: str) -> None:
    # An emoji as a surrogate-pair escape, and a literal backslash followed by "ud800".
    r = httpx.post(f"{base}/echo", content=b'{"goal": "\\ud83d\\ude00 \\\\ud800"}', headers=JSON)
    assert r.status_code == 200 and r.json()["goal_chars"] == 8


def test_lone_surrogate_field_scan() -> None:
    assert lone_surrogate_field(b'{"a": "plain ascii"}') is None
    assert lone_surrogate_field('{"a": "caf\u00e9 \U0001f600"}'.encode()) is None
    assert lone_surrogate_field(b"not json \\ud800") is None  # left to the route's parser
    assert lone_surrogate_field(b'["\\ud800"]') == "0"
    assert lone_surrogate_field(b'"\\ud800"') == "body"
