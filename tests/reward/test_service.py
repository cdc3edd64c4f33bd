"""The reward service over HTTP against the real Redis: idempotency, forks, stats, bad bodies."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest

from tests.conftest import free_port
from tests.reward.conftest import start_reward_service
from tests.reward.helpers import click, request, state


def body(req) -> dict:
    return req.model_dump(mode="json", exclude_none=True)


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def base(reward_service) -> str:
    return reward_service[0]


def stats(base: str, domain: str) -> dict:
    return httpx.get(f"{base}/stats").json()["domains"].get(domain, {})


def test_ready_and_rules(base: str) -> None:
    assert httpx.get(f"{base}/ready").json()["checks"] == {"redis": "ok"}
    rules = httpx.get(f"{base}/rules").json()
    assert rules["gomail"]["milestones"]["compose_opened"]["weight"] == 0.3


def test_linear_episode_pays_each_milestone_once(base: str) -> None:
    ep = uid("ep")
    s0, s1 = state(), state(url="http://sites/gomail/#compose", progress={"compose_opened": True})
    s2 = state(url="http://sites/gomail/", progress={"compose_opened": True})
    first = httpx.post(f"{base}/reward", json=body(request(s0, s1, episode_id=ep, step=0))).json()
    assert first["milestones"] == ["compose_opened"] and first["total"] == pytest.approx(0.6)
    # No parent named: the service continues from the episode's latest transition.
    second = httpx.post(f"{base}/reward", json=body(request(s1, s2, episode_id=ep, step=1))).json()
    assert second["milestones"] == [] and second["progress"] == 0
    again = httpx.post(f"{base}/reward", json=body(request(s2, s1, episode_id=ep, step=2))).json()
    assert again["milestones"] == [] and again["loop_penalty"] == -1.0


def test_duplicate_transition_id_pays_once(base: str) -> None:
    before = stats(base, "gomail").get("transitions", 0)
    req = request(state(), state(progress={"compose_opened": True}), episode_id=uid("ep"))
    a = httpx.post(f"{base}/reward", json=body(req)).json()
    b = httpx.post(f"{base}/reward", json=body(req)).json()
    assert not a["duplicate"] and b["duplicate"]
    assert {**a, "duplicate": True} == b
    assert stats(base, "gomail")["transitions"] == before + 1
    changed = body(req) | {"step": 5}
    r = httpx.post(f"{base}/reward", json=changed)
    assert r.status_code == 409 and "different body" in r.json()["error"]


async def test_concurrent_duplicates_pay_exactly_once_across_workers(reward_service) -> None:
    base, prefix = reward_service
    second, base2 = start_reward_service(prefix)  # a second stateless worker on the same Redis
    try:
        before = stats(base, "gocalendar").get("milestones_fired", {}).get("create_clicked", 0)
        for _ in range(5):
            req = request(state(), state(progress={"create_clicked": True}), domain="gocalendar", episode_id=uid("ep"))
            async with httpx.AsyncClient(timeout=30) as client:
                answers = await asyncio.gather(
                    *[client.post(f"{(base, base2)[i % 2]}/reward", json=body(req)) for i in range(16)]
                )
            out = [r.json() for r in answers]
            assert all(r.status_code == 200 for r in answers), [r.text for r in answers]
            assert sum(not o["duplicate"] for o in out) == 1
            assert {o["total"] for o in out} == {0.6}
        assert stats(base, "gocalendar")["milestones_fired"]["create_clicked"] == before + 5
    finally:
        second.terminate()
        second.wait(timeout=10)


def test_siblings_of_one_fork_are_scored_against_the_same_memory(base: str) -> None:
    ep = uid("ep")
    s0 = state()
    root = request(s0, s0, episode_id=ep, step=0, action=click(1, 2))
    assert httpx.post(f"{base}/reward", json=body(root)).status_code == 200
    opened = state(progress={"compose_opened": True})
    siblings = [
        request(s0, opened, episode_id=ep, step=1, parent_transition_id=root.transition_id, action=click(i, 9))
        for i in range(4)
    ]
    outs = [httpx.post(f"{base}/reward", json=body(s)).json() for s in siblings]
    assert [o["milestones"] for o in outs] == [["compose_opened"]] * 4  # no sibling steals another's milestone
    # The branch continued from sibling 2 remembers its milestone.
    nxt = request(opened, opened, episode_id=ep, step=2, parent_transition_id=siblings[2].transition_id)
    assert httpx.post(f"{base}/reward", json=body(nxt)).json()["milestones"] == []
    orphan = request(s0, opened, episode_id=ep, step=3, parent_transition_id="t-never-seen")
    r = httpx.post(f"{base}/reward", json=body(orphan))
    assert r.status_code == 409 and "unknown parent_transition_id" in r.json()["error"]


def test_infra_error_pays_nothing_and_is_flagged(base: str) -> None:
    ep = uid("ep")
    crash = request(state(), state(progress={"compose_opened": True}), episode_id=ep, infra_error=True)
    out = httpx.post(f"{base}/reward", json=body(crash)).json()
    assert out["infra_error"] and out["total"] == 0 and out["milestones"] == []
    # The milestone was not spent by the crashed transition.
    retry = request(state(), state(progress={"compose_opened": True}), episode_id=ep, step=1)
    assert httpx.post(f"{base}/reward", json=body(retry)).json()["milestones"] == ["compose_opened"]


def test_stats_groups_and_metrics(base: str) -> None:
    before = stats(base, "zilloft")
    flat, varied = uid("g"), uid("g")
    for i in range(3):  # an episode group of three, equal rewards
        req = request(state(), state(), domain="zilloft", group_id=flat, action=click(i, 3), episode_id=uid("ep"))
        httpx.post(f"{base}/reward", json=body(req))
    outcomes = [state(), state(progress={"search": True}, url="http://sites/zilloft/search")]
    for nxt in outcomes:  # two members, different rewards
        req = request(state(), nxt, domain="zilloft", group_id=varied, episode_id=uid("ep"))
        httpx.post(f"{base}/reward", json=body(req))
    after = stats(base, "zilloft")
    assert after["groups_seen"] == before.get("groups_seen", 0) + 2
    zero_before = (before.get("frac_reward_zero_std") or 0) * before.get("groups_seen", 0)
    assert after["frac_reward_zero_std"] * after["groups_seen"] == pytest.approx(zero_before + 1)
    assert after["transitions"] == before.get("transitions", 0) + 5
    assert after["milestones_fired"]["search"] >= 1 and sum(after["reward_histogram"].values()) == after["transitions"]
    metrics = httpx.get(f"{base}/metrics").text
    assert 'halo_reward_milestones_total{domain="zilloft",milestone="search"}' in metrics
    assert 'halo_reward_frac_reward_zero_std{domain="zilloft"}' in metrics


def _valid() -> dict:
    return body(request(state(), state(), episode_id=uid("ep")))


BAD_BODIES = {
    "not json": b"{nope",
    "a list": json.dumps([1, 2]).encode(),
    "empty object": b"{}",
    "missing next": json.dumps({k: v for k, v in _valid().items() if k != "next"}).encode(),
    "unknown field": json.dumps(_valid() | {"rewrd": 1}).encode(),
    "negative step": json.dumps(_valid() | {"step": -1}).encode(),
    "bad transition id": json.dumps(_valid() | {"transition_id": "a b/c"}).encode(),
    "bad coordinate": json.dumps(_valid() | {"action": {"action": "left_click", "coordinate": [5000, 1]}}).encode(),
    "unknown action": json.dumps(_valid() | {"action": {"action": "fly"}}).encode(),
    "no action nor parse error": json.dumps({k: v for k, v in _valid().items() if k != "action"}).encode(),
    "both action and parse error": json.dumps(_valid() | {"parse_error": {"reason": "empty", "detail": ""}}).encode(),
    "bad domain": json.dumps(_valid() | {"domain": "../etc"}).encode(),
    "site_state not an object": json.dumps(_valid() | {"next": {"url": "x", "site_state": [1]}}).encode(),
    "huge axtree": json.dumps(_valid() | {"next": {"url": "x", "axtree": "a" * 400_001}}).encode(),
    "wrong schema version": json.dumps(_valid() | {"schema_version": 2}).encode(),
    "success not bool": json.dumps(_valid() | {"task_success": "maybe"}).encode(),
    "parent is itself": None,
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_bad_bodies_get_4xx_with_a_clear_message(base: str, name: str) -> None:
    raw = BAD_BODIES[name]
    if raw is None:
        valid = _valid()
        raw = json.dumps(valid | {"parent_transition_id": valid["transition_id"]}).encode()
    r = httpx.post(f"{base}/reward", content=raw, headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500, (name, r.status_code, r.text)
    err = r.json()
    assert err["error"].startswith("invalid request") and err["kind"] == "client", err
    assert "Traceback" not in r.text


def test_wrong_method_and_path(base: str) -> None:
    assert httpx.get(f"{base}/reward").status_code == 405
    assert httpx.post(f"{base}/rewards", json={}).status_code == 404


def test_oversized_body_is_refused_before_parsing(base: str) -> None:
    r = httpx.post(f"{base}/reward", content=b"x" * 8_000_001, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "exceeds" in r.json()["error"]


def test_redis_down_is_a_503_not_a_500() -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    proc, base = start_reward_service("test:reward:dead:", ready_path="/health", HALO_REDIS_URL=dead)
    try:
        assert httpx.get(f"{base}/ready").status_code == 503
        r = httpx.post(f"{base}/reward", json=body(request(state(), state())))
        assert r.status_code == 503 and "episode memory unavailable" in r.json()["error"]
        assert httpx.get(f"{base}/stats").status_code == 503
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_web_page_cannot_score_episodes(base: str) -> None:
    """What any page in the user's browser could send without a CORS preflight, and with JSON: 403;
    the stack's own programs (no Origin) and reads are unaffected."""
    ep = uid("ep")
    after = state(url="http://sites/gomail/#compose", progress={"compose_opened": True})
    payload = json.dumps(body(request(state(), after, episode_id=ep, step=0)))
    for content_type in (None, "text/plain", "application/json"):
        headers = {"Origin": "http://evil.example"} | ({"Content-Type": content_type} if content_type else {})
        r = httpx.post(f"{base}/reward", content=payload, headers=headers)
        assert r.status_code == 403, r.text
        assert "a web page" in r.json()["error"] and "evil.example" in r.json()["error"]
    assert httpx.get(f"{base}/ready", headers={"Origin": "http://evil.example"}).status_code == 200
    first = httpx.post(f"{base}/reward", content=payload, headers={"Content-Type": "application/json"}).json()
    assert first["milestones"] == ["compose_opened"]  # nothing was scored for the episode before
