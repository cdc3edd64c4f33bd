"""The reward service answers 4xx, never 5xx, to lone UTF-16 surrogates in any string it accepts
and to oversize bodies sent chunked (no Content-Length), and the connection stays usable."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from halo.schemas import Action
from tests.reward.helpers import request, state
from tests.surrogates import JSON_HEADERS as JSON
from tests.surrogates import poisoned, spellings, string_places


@pytest.fixture
def base(reward_service) -> str:
    return reward_service[0]


def _valid() -> dict:
    prev = state(progress={"compose_opened": False}, axtree='[1] button "Compose"', extra={"note": "x"})
    nxt = state(progress={"compose_opened": True}, axtree='[1] button "Compose"', extra={"note": "y"})
    req = request(prev, nxt, goal="Write to Ann", action=Action(action="type", text="hello", element_id="1"))
    return req.model_dump(mode="json", exclude_none=True)


def test_a_lone_surrogate_in_any_string_is_a_422_never_a_500(base: str) -> None:
    valid = _valid()
    # Every string, and the keys of the free-form site_state dicts.
    places = list(string_places(valid, keys=lambda path: "site_state" in path))
    assert any("goal" in p for p in places) and any("site_state" in p for p in places)
    assert any("text" in p for p in places) and any("task_id" in p for p in places)
    with httpx.Client(base_url=base, timeout=30) as client:
        for place in places:
            for raw in spellings(poisoned(valid, place)):
                r = client.post("/reward", content=raw, headers=JSON)
                assert r.status_code == 422, (place, r.status_code, r.text)
                assert "surrogate" in r.json()["error"] or "invalid request" in r.json()["error"], (place, r.text)
        # The same kept-alive client is still served, and a valid pair (an emoji) is a character.
        ok = json.loads(json.dumps(valid))
        ok["goal"] = "Write to Ann \U0001f600"
        ok["next"]["site_state"]["note"] = "\U0001f600"
        r = client.post("/reward", content=json.dumps(ok).encode(), headers=JSON)
        assert r.status_code == 200, r.text


def _chunked(total: int) -> Iterator[bytes]:
    yield b'{"transition_id": "t-1", "goal": "'
    for _ in range(total // 65536):
        yield b"a" * 65536
    yield b'"}'


def test_a_chunked_oversize_body_is_a_413(base: str) -> None:
    with httpx.Client(base_url=base, timeout=60) as client:
        r = client.post("/reward", content=_chunked(40_000_000), headers=JSON)  # 40 MB, no Content-Length
        assert r.status_code == 413 and "exceeds" in r.json()["error"], r.text
        assert client.post("/reward", json=_valid()).status_code == 200
