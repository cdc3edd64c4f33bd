"""1,000 malformed or hostile requests: every answer is a 2xx/4xx with a clear message, never a 5xx."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.env.helpers import create

pytestmark = [pytest.mark.slow, pytest.mark.browser]

N_REQUESTS = 1000

BAD_ACTIONS = [
    {},
    {"action": "fly"},
    {"action": None},
    {"action": 3},
    {"action": "left_click"},
    {"action": "left_click", "coordinate": [1001, 5]},
    {"action": "left_click", "coordinate": [-1, 5]},
    {"action": "left_click", "coordinate": [5]},
    {"action": "left_click", "coordinate": [1, 2, 3]},
    {"action": "left_click", "coordinate": "10,20"},
    {"action": "left_click", "coordinate": [1e308, 1]},
    {"action": "left_click", "coordinate": [5, 5], "element_id": "inc"},
    {"action": "left_click", "element_id": '"] , body [x="'},
    {"action": "left_click", "element_id": "a" * 65},
    {"action": "left_click", "element_id": ""},
    {"action": "type"},
    {"action": "type", "text": "x" * 2001},
    {"action": "type", "text": 12},
    {"action": "key"},
    {"action": "key", "keys": []},
    {"action": "key", "keys": ["a"] * 7},
    {"action": "key", "keys": [""]},
    {"action": "key", "keys": ["x" * 33]},
    {"action": "scroll"},
    {"action": "scroll", "pixels": 10**9},
    {"action": "hscroll", "pixels": "down"},
    {"action": "wait", "time": 1e9},
    {"action": "wait", "time": -1},
    {"action": "terminate"},
    {"action": "terminate", "status": "maybe"},
    {"action": "answer"},
    {"action": "scroll", "pixels": 5, "element_id": "inc"},
    {"action": "left_click_drag"},
    {"action": "wait", "surprise": True},
]

# Well-formed actions the page cannot take: 200 with last_action_error.
IMPOSSIBLE = [
    {"action": "left_click", "element_id": "nope"},
    {"action": "double_click", "element_id": "zzz:9"},
    {"action": "key", "keys": ["NoSuchKey"]},
    {"action": "type", "element_id": "missing", "text": "hi"},
]


def _requests(sid: str, rng: random.Random) -> list[tuple[str, str, dict]]:
    """(method, path, httpx kwargs) for one hostile request."""
    junk_ids = [
        "x",
        "../../etc/passwd",
        "%2e%2e%2f",
        "sess-" + "0" * 32,
        "'; DROP TABLE",
        "a" * 5000,
        "%00%E2%80%AE",
        "%ZZ",
    ]
    junk_bodies = ["", "null", "[]", "{", '{"a":', "\x00\xff", "1e999", '"str"', json.dumps([{}] * 50), "{" * 5000]
    choice = rng.randrange(15)
    if choice == 0:
        return (
            "POST",
            "/sessions",
            {"content": rng.choice(junk_bodies), "headers": {"content-type": "application/json"}},
        )
    if choice == 1:
        body = rng.choice(
            [
                {"task_id": "../../etc/passwd"},
                {"task_id": "v2.gomail-999"},
                {"task_id": "local.nosuch-1"},
                {"task_id": "fixture.nope"},
                {"task_id": "v2./etc/passwd"},
                {"task_id": ""},
                {"task_id": "x" * 500},
                {"task_id": "fixture.actions", "max_steps": 0},
                {"task_id": "fixture.actions", "max_steps": 10**6},
                {"task_id": "fixture.actions", "seed": -1},
                {"task_id": "fixture.actions", "run_id": "a/b"},
                {"task_id": "fixture.actions", "schema_version": 2},
                {"task_id": "fixture.actions", "admin": True},
                {"task_id": None},
                {},
            ]
        )
        return "POST", "/sessions", {"json": body}
    if choice in (2, 3, 4, 5):
        return "POST", f"/sessions/{sid}/step", {"json": {"action": rng.choice(BAD_ACTIONS)}}
    if choice == 6:
        return "POST", f"/sessions/{sid}/step", {"json": rng.choice([{}, {"action": None}, [], {"act": {}}])}
    if choice == 7:
        return "POST", f"/sessions/{rng.choice(junk_ids)}/step", {"json": {"action": {"action": "wait", "time": 0}}}
    if choice == 8:
        return "POST", f"/sessions/{sid}/fork", {"json": rng.choice([{"n": 0}, {"n": 33}, {"n": "two"}, {}, {"n": -1}])}
    if choice == 9:
        snap = rng.choice(
            [
                {},
                {"task_id": "fixture.actions"},
                {"task_id": "fixture.actions", "url": "file:///etc/passwd", "step": 0, "storage_state": {}},
                {"task_id": "fixture.actions", "url": "http://169.254.169.254/", "step": 0, "storage_state": {}},
                {"task_id": "fixture.actions", "url": "http://127.0.0.1:6379/", "step": 0, "storage_state": {}},
                {"task_id": "fixture.actions", "url": "javascript:alert(1)", "step": 0, "storage_state": {}},
                {"task_id": "v2.nope-1", "url": "http://x/", "step": 0, "storage_state": {}},
                {"task_id": "fixture.actions", "url": "{url}", "step": 0, "storage_state": {"cookies": "x"}},
                {"task_id": "fixture.actions", "url": "{url}", "step": 0, "storage_state": {"cookies": [{"a": 1}]}},
                {"task_id": "fixture.actions", "url": "{url}", "step": 0, "storage_state": {"origins": 5}},
                {
                    "task_id": "fixture.actions",
                    "url": "{url}",
                    "step": 0,
                    "storage_state": {"halo_page": {"fields": 7}},
                },
                {
                    "task_id": "fixture.actions",
                    "url": "{url}",
                    "step": 0,
                    "storage_state": {"origins": [{"origin": "http://169.254.169.254:80", "localStorage": []}]},
                },
                {"task_id": "fixture.actions", "url": "{url}", "step": 10**9, "storage_state": {}},
            ]
        )
        return "POST", "/sessions/restore", {"json": snap}
    if choice == 10:
        return "GET", f"/screenshots/{rng.choice(['x', '0' * 64, 'G' * 64, '../' * 10, 'a' * 65])}", {}
    if choice == 11:
        return "GET", "/tasks", {"params": {"domain": rng.choice(["../x", "A" * 100, "", "<script>"])}}
    if choice == 12:
        return rng.choice(["PUT", "PATCH", "DELETE"]), rng.choice(["/sessions", "/tasks", "/sessions/restore"]), {}
    if choice == 13:
        return "DELETE", f"/sessions/{rng.choice(junk_ids)}", {}
    return "GET", f"/sessions/{rng.choice(junk_ids)}/snapshot", {}


def test_a_thousand_hostile_requests_get_no_5xx(http, site):
    sid = create(http)["observation"]["session_id"]
    rng = random.Random(1234)
    plan = [_requests(sid, rng) for _ in range(N_REQUESTS - len(IMPOSSIBLE) * 5)]
    for action in IMPOSSIBLE * 5:
        plan.append(("POST", f"/sessions/{sid}/step", {"json": {"action": action}}))
    rng.shuffle(plan)
    base = f"{site.url}/actions.html"
    for _, path, kwargs in plan:  # restore bodies that reach the browser must target the fixture site
        if (
            path == "/sessions/restore"
            and isinstance(kwargs.get("json"), dict)
            and kwargs["json"].get("url") == "{url}"
        ):
            kwargs["json"] = dict(kwargs["json"], url=base)
    assert len(plan) == N_REQUESTS

    def send(item: tuple[str, str, dict]) -> tuple[str, str, int, dict | None]:
        method, path, kwargs = item
        r = http.request(method, path, **kwargs)
        try:
            body = r.json()
        except ValueError:
            body = None
        return method, path, r.status_code, body

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(send, plan))

    server_errors = [(m, p[:80], s, b) for m, p, s, b in results if s >= 500]
    assert not server_errors, server_errors[:5]
    for method, path, status, body in results:
        if status >= 400:
            assert isinstance(body, dict) and body.get("error"), (method, path, status, body)
    ok_steps = [b for m, p, s, b in results if s == 200 and p.endswith("/step")]
    assert len(ok_steps) >= len(IMPOSSIBLE) * 5
    assert all(b["observation"]["last_action_error_kind"] == "agent" for b in ok_steps)
    statuses = {s for _, _, s, _ in results}
    assert statuses <= {200, 404, 405, 409, 413, 422}, statuses

    # Oversized body: refused before it is parsed.
    huge = http.post("/sessions", content=b"{" + b" " * (33 * 1024 * 1024) + b"}")
    assert huge.status_code == 413
    assert http.get("/ready").status_code == 200
