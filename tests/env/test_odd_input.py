"""The env service answers 4xx, never 5xx, to lone UTF-16 surrogates in every string it accepts
(task ids, run ids, lease owners, action text, snapshots) and to oversize chunked bodies, on a
kept-alive connection that stays usable."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.env.helpers import create
from tests.surrogates import JSON_HEADERS as JSON
from tests.surrogates import poisoned, spellings, string_places

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _assert_refused_everywhere(http: httpx.Client, path: str, valid: Any) -> int:
    places = list(string_places(valid))
    for place in places:
        for raw in spellings(poisoned(valid, place)):
            r = http.post(path, content=raw, headers=JSON)
            assert 400 <= r.status_code < 500, (path, place, r.status_code, r.text)
            assert r.json()["error"], r.text
    return len(places)


def test_lone_surrogates_are_refused_in_every_field(http: httpx.Client) -> None:
    sid = create(http)["observation"]["session_id"]
    snapshot = http.get(f"/sessions/{sid}/snapshot").json()
    bodies = [
        ("/sessions", {"task_id": "fixture.actions", "run_id": "run-1", "seed": 1}),
        ("/leases", {"owner": "worker-1"}),
        (f"/sessions/{sid}/step", {"action": {"action": "type", "text": "hello", "element_id": "1"}}),
        (f"/sessions/{sid}/step", {"action": {"action": "answer", "text": "42"}}),
        (f"/sessions/{sid}/step", {"action": {"action": "key", "keys": ["ctrl", "a"]}}),
        ("/sessions/restore", snapshot),
    ]
    checked = sum(_assert_refused_everywhere(http, path, body) for path, body in bodies)
    assert checked > 20
    # Nothing was created by the refused requests, the session is untouched and still usable.
    assert [s["session_id"] for s in http.get("/sessions").json()] == [sid]
    r = http.post(
        f"/sessions/{sid}/step", json={"action": {"action": "type", "text": "ok \U0001f600", "element_id": "1"}}
    )
    assert r.status_code == 200, r.text
    assert r.json()["observation"]["step"] == 1


def test_a_chunked_oversize_body_is_a_413(http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"task_id": "fixture.actions", "url": "'
        for _ in range(40 * 16):  # 40 MiB, no Content-Length
            yield b"a" * 65536
        yield b'"}'

    r = http.post("/sessions/restore", content=chunks(), headers=JSON)
    assert r.status_code == 413 and "exceeds" in r.json()["error"], r.text
    assert http.get("/ready").status_code == 200
    assert http.get("/sessions").json() == []


def test_a_page_whose_text_holds_lone_surrogates_is_observed_not_a_500(http: httpx.Client) -> None:
    """Lone surrogates can also come from the page (JavaScript strings allow them): every answer
    that carries page text is still 200, with U+FFFD where the page had a lone surrogate."""
    reset = create(http, task_id="fixture.surrogates")
    obs, sid = reset["observation"], reset["observation"]["session_id"]
    assert obs["title"] == "odd \ufffd" and "press" in obs["axtree"]  # the tree quotes names JSON-escaped
    assert obs["site_state"]["state"]["note"] == "n\ufffd" and "\ufffdkey" in obs["site_state"]["state"]
    r = http.post(f"/sessions/{sid}/step", json={"action": {"action": "left_click", "element_id": _bid(obs, "press")}})
    assert r.status_code == 200, r.text
    assert r.json()["observation"]["site_state"]["state"] == {"count": 1, "note": "n\ufffd\ufffd", "\ufffdkey": 1}
    snap = http.get(f"/sessions/{sid}/snapshot")
    assert snap.status_code == 200, snap.text
    assert "\ufffd" in json.dumps(snap.json()["storage_state"], ensure_ascii=False)
    fork = http.post(f"/sessions/{sid}/fork", json={"n": 1})
    assert fork.status_code == 200, fork.text
    assert fork.json()["sessions"][0]["observation"]["title"] == "odd \ufffd"
    assert http.post(f"/sessions/{sid}/validate").status_code == 200


def _bid(obs: dict, name: str) -> str:
    line = next(x for x in obs["axtree"].splitlines() if name in x)
    return line.split("[", 1)[1].split("]", 1)[0]
