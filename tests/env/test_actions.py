"""Every computer-use action kind, and the actions a page cannot take, against real Chromium."""

from __future__ import annotations

import hashlib

import pytest

from tests.env.helpers import create, events, rel, step

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_reset_step_close_and_screenshot(http):
    reset = create(http)
    obs = reset["observation"]
    sid = obs["session_id"]
    assert sid.startswith("sess-") and len(sid) >= 37  # 128 random bits
    assert obs["step"] == 0 and obs["url"].endswith("/actions.html")
    assert '[inc] button "Increment"' in obs["axtree"]
    png = http.get(f"/screenshots/{obs['screenshot']['sha256']}")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert hashlib.sha256(png.content).hexdigest() == obs["screenshot"]["sha256"]
    assert obs["screenshot"]["url"].endswith(obs["screenshot"]["sha256"])

    out = step(http, sid, action="left_click", coordinate=rel(200, 125))
    assert out["observation"]["step"] == 1
    assert out["observation"]["site_state"]["state"]["count"] == 1
    assert out["observation"]["last_action_error"] is None
    assert [s["session_id"] for s in http.get("/sessions").json()] == [sid]
    metrics = http.get("/metrics").text
    assert 'env_steps_total{outcome="ok"}' in metrics and "env_reset_seconds_bucket" in metrics
    stats = http.get("/stats").json()
    assert stats["sessions"] == 1 and stats["memory_per_session_bytes"] > 0
    assert http.delete(f"/sessions/{sid}").status_code == 200
    assert http.post(f"/sessions/{sid}/step", json={"action": {"action": "wait", "time": 0}}).status_code == 404
    assert http.delete(f"/sessions/{sid}").status_code == 404


def test_pointer_actions(http):
    sid = create(http)["observation"]["session_id"]
    target = rel(250, 350)
    kinds = [
        ("mouse_move", "hover"),
        ("left_click", "click"),
        ("right_click", "right"),
        ("middle_click", "middle"),
        ("double_click", "dblclick"),
        ("triple_click", "triple"),
    ]
    for action, expected in kinds:
        obs = step(http, sid, action=action, coordinate=target)["observation"]
        assert obs["last_action_error"] is None, action
        assert expected in [e["type"] for e in events(obs)], (action, events(obs)[-3:])


def test_drag_scroll_wait(http):
    sid = create(http)["observation"]["session_id"]
    # No mouse position yet and no start: the page cannot know where to drag from.
    obs = step(http, sid, action="left_click_drag", coordinate=rel(700, 400))["observation"]
    assert "start_coordinate" in obs["last_action_error"] and obs["last_action_error_kind"] == "agent"

    obs = step(http, sid, action="left_click_drag", start_coordinate=rel(630, 330), coordinate=rel(830, 430))[
        "observation"
    ]
    assert obs["last_action_error"] is None
    drag = [e for e in events(obs) if e["type"] == "drag"][-1]
    assert abs(drag["to"][0] - drag["from"][0] - 200) <= 2 and abs(drag["to"][1] - drag["from"][1] - 100) <= 2

    obs = step(http, sid, action="scroll", pixels=300)["observation"]
    assert events(obs)[-1] == {"type": "wheel", "dx": 0, "dy": 300}
    obs = step(http, sid, action="hscroll", pixels=-120, coordinate=rel(640, 360))["observation"]
    assert events(obs)[-1] == {"type": "wheel", "dx": -120, "dy": 0}
    obs = step(http, sid, action="wait", time=0.2)["observation"]
    assert obs["last_action_error"] is None and obs["step"] == 5


def test_keyboard_and_element_ids(http):
    sid = create(http)["observation"]["session_id"]
    obs = step(http, sid, action="type", element_id="name", text="Ada Lovelace")["observation"]
    assert obs["site_state"]["state"]["name"] == "Ada Lovelace"
    assert '[name] textbox "Your name" value="Ada Lovelace"' in obs["axtree"]

    step(http, sid, action="left_click", coordinate=rel(1100, 680))  # empty page: focus leaves the input
    obs = step(http, sid, action="key", keys=["ctrl", "shift", "k"])["observation"]
    assert obs["last_action_error"] is None
    chord = [e for e in events(obs) if e["type"] == "key" and e["key"].lower() == "k"][-1]
    assert chord["ctrl"] and chord["shift"] and not chord["alt"]
    obs = step(http, sid, action="key", keys=["Return"])["observation"]
    assert events(obs)[-1]["key"] == "Enter"

    # Auto-numbered ids address elements without a data-halo-id of their own.
    line = next(x for x in obs["axtree"].splitlines() if '"I agree"' in x and "checkbox" in x)
    checkbox_id = line.split("]", 1)[0].strip().lstrip("[")
    obs = step(http, sid, action="left_click", element_id=checkbox_id)["observation"]
    assert f"[{checkbox_id}] checkbox" in obs["axtree"] and "checked=true" in obs["axtree"]

    # An element far below the fold is scrolled into view, then clicked.
    obs = step(http, sid, action="left_click", element_id="far")["observation"]
    assert obs["last_action_error"] is None


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"action": "left_click", "element_id": "no-such-element"}, "unknown element id"),
        ({"action": "left_click", "element_id": "hidden"}, "not visible"),
        ({"action": "type", "element_id": "ghost", "text": "x"}, "unknown element id"),
        ({"action": "key", "keys": ["ctrl", "NotAKey"]}, "unknown key name 'NotAKey'"),
        ({"action": "key", "keys": ["Hyper_L"]}, "unknown key name"),
    ],
)
def test_actions_the_page_cannot_take_are_agent_errors(http, action, message):
    sid = create(http)["observation"]["session_id"]
    r = http.post(f"/sessions/{sid}/step", json={"action": action})
    assert r.status_code == 200, r.text
    obs = r.json()["observation"]
    assert message in obs["last_action_error"]
    assert obs["last_action_error_kind"] == "agent"
    assert obs["step"] == 1  # the attempt counts as a step


def test_answer_terminate_and_truncation(http):
    sid = create(http)["observation"]["session_id"]
    for _ in range(3):
        step(http, sid, action="left_click", element_id="inc")
    out = step(http, sid, action="answer", text="three")
    assert out["terminated"] and out["observation"]["terminated"] and out["observation"]["answer"] == "three"
    assert out["info"]["task_success"] is True and out["reward"] == 1.0
    assert out["info"]["finish_state"]["state"]["count"] == 3
    again = http.post(f"/sessions/{sid}/step", json={"action": {"action": "wait", "time": 0}})
    assert again.status_code == 409 and "ended" in again.json()["error"]

    sid = create(http)["observation"]["session_id"]
    out = step(http, sid, action="terminate", status="failure")
    assert out["terminated"] and out["info"]["task_success"] is False and out["info"]["agent_status"] == "failure"

    sid = create(http, max_steps=2)["observation"]["session_id"]
    assert not step(http, sid, action="wait", time=0)["truncated"]
    out = step(http, sid, action="wait", time=0)
    assert out["truncated"] and not out["terminated"] and "task_success" in out["info"]

    sid = create(http)["observation"]["session_id"]
    result = http.post(f"/sessions/{sid}/validate").json()
    assert result["success"] is False and result["finish_state"]["state"]["count"] == 0
