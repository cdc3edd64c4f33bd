"""Fork exactness: a fork's screenshot and /finish state equal its parent's, now and after the
same next action; snapshot/restore round trips; replay forks say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from halo.schemas import ForkMethod
from tests.env.fixtures import EnvServer, FixtureBackend, client, settings_for
from tests.env.helpers import create, rel, step

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _prepare(http) -> str:
    """A session with state in storage, in an unsaved input, in a checkbox, and a scrolled page."""
    sid = create(http)["observation"]["session_id"]
    step(http, sid, action="left_click", element_id="inc")
    step(http, sid, action="type", element_id="name", text="Grace")
    step(http, sid, action="left_click", coordinate=rel(550, 215))  # the draft input (not persisted by the page)
    step(http, sid, action="type", text="unsaved draft")
    step(http, sid, action="left_click_drag", start_coordinate=rel(630, 330), coordinate=rel(700, 380))
    step(http, sid, action="scroll", pixels=40)
    return sid


def test_fork_state_and_next_screenshot_equal_the_parent(http):
    sid = _prepare(http)
    parent_now = step(http, sid, action="mouse_move", coordinate=rel(250, 350))["observation"]  # hovering the target

    r = http.post(f"/sessions/{sid}/fork", json={"n": 2})
    assert r.status_code == 200, r.text
    fork = r.json()
    assert fork["method"] == "snapshot" and fork["parent_id"] == sid and len(fork["sessions"]) == 2
    children = [c["observation"] for c in fork["sessions"]]
    assert len({c["session_id"] for c in children} | {sid}) == 3
    for child in children:
        assert child["step"] == parent_now["step"] and child["url"] == parent_now["url"]
        assert child["site_state"] == parent_now["site_state"]
        assert child["axtree"] == parent_now["axtree"]
        assert child["screenshot"]["sha256"] == parent_now["screenshot"]["sha256"]

    # The same next action everywhere: identical screenshots and /finish states.
    action = {"action": "left_click", "element_id": "inc"}
    after = [step(http, s, **action) for s in [sid] + [c["session_id"] for c in children]]
    shas = {a["observation"]["screenshot"]["sha256"] for a in after}
    assert len(shas) == 1, "a fork's next screenshot differs from its parent's"
    finals = [http.post(f"/sessions/{a['observation']['session_id']}/validate").json() for a in after]
    assert finals[0]["finish_state"]["state"]["count"] == 2
    assert all(f["finish_state"] == finals[0]["finish_state"] for f in finals)

    # Forks are independent afterwards.
    step(http, children[0]["session_id"], action="left_click", element_id="inc")
    assert http.post(f"/sessions/{sid}/validate").json()["finish_state"]["state"]["count"] == 2


def test_a_fork_method_the_backend_lacks_is_refused_and_a_page_without_a_render_is_not_rewound(http):
    sid = create(http)["observation"]["session_id"]
    refused = http.post(f"/sessions/{sid}/fork", json={"n": 1, "method": "replay"})
    assert refused.status_code == 422 and "snapshot" in refused.json()["error"]
    assert http.post(f"/sessions/{sid}/fork", json={"n": 1, "method": "teleport"}).status_code == 422
    # The fixture page mounts no render function: closing a session parks nothing, and a fork
    # that prefers a rewind is restored from a snapshot instead, as the answer says.
    first = http.post(f"/sessions/{sid}/fork", json={"n": 1}).json()
    http.delete(f"/sessions/{first['sessions'][0]['observation']['session_id']}")
    assert http.get("/stats").json()["contexts_parked"] == 0
    fork = http.post(f"/sessions/{sid}/fork", json={"n": 1, "method": "rewind"}).json()
    assert fork["method"] == "snapshot" and fork["sessions"][0]["info"]["method"] == "snapshot"


def test_snapshot_restore_round_trip(http):
    sid = _prepare(http)
    before = step(http, sid, action="wait", time=0)["observation"]
    snap = http.get(f"/sessions/{sid}/snapshot")
    assert snap.status_code == 200
    body = snap.json()
    assert body["task_id"] == "fixture.actions" and body["step"] == before["step"]
    assert body["storage_state"]["origins"][0]["localStorage"][0]["name"] == "fx"
    assert len(body["actions"]) == before["step"]

    restored = http.post("/sessions/restore", json=body)
    assert restored.status_code == 200, restored.text
    obs = restored.json()["observation"]
    assert obs["session_id"] != sid and obs["step"] == before["step"]
    assert obs["site_state"] == before["site_state"]
    assert obs["screenshot"]["sha256"] == before["screenshot"]["sha256"]

    hostile = dict(body, url="http://169.254.169.254/latest/meta-data/")
    assert http.post("/sessions/restore", json=hostile).status_code == 422
    hostile = dict(body, url="file:///etc/passwd")
    assert http.post("/sessions/restore", json=hostile).status_code == 422


def test_replay_fork(site, tmp_path: Path):
    settings = settings_for(tmp_path)
    backend = FixtureBackend(site.url, fork_method=ForkMethod.REPLAY)
    with EnvServer(settings, [backend]) as server, client(server) as http:
        sid = create(http)["observation"]["session_id"]
        step(http, sid, action="left_click", element_id="inc")
        parent = step(http, sid, action="type", element_id="name", text="Replayed")["observation"]
        fork = http.post(f"/sessions/{sid}/fork", json={"n": 1}).json()
        assert fork["method"] == "replay"
        child = fork["sessions"][0]["observation"]
        assert child["site_state"] == parent["site_state"] and child["step"] == parent["step"]
        assert child["screenshot"]["sha256"] == parent["screenshot"]["sha256"]
