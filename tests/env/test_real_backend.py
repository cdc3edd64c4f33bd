"""The REAL backend end to end: agisdk's v2 task `v2.gomail-24` ("Delete all emails from John
Doe") against a local server speaking REAL's /config and /finish protocol, judged by agisdk's own
WebCloneEvaluator running the task's eval script (eval_gomail_24.py)."""

from __future__ import annotations

import json

import pytest

from tests.env.helpers import create, step

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TASK = "v2.gomail-24"


def test_real_task_success_through_agisdk_evaluator(http, site):
    reset = create(http, task_id=TASK, run_id="run-7")
    obs = reset["observation"]
    assert reset["info"]["backend"] == "real"
    assert obs["url"] == f"{site.url}/gomail/"
    assert obs["goal"] == "GoMail: Delete all emails from John Doe"
    assert '[delete-1] button "Delete"' in obs["axtree"]
    assert obs["site_state"] is None  # hosted REAL sites expose no in-page state

    # /config saw the run and task ids, as REAL's leaderboard expects.
    snap = http.get(f"/sessions/{obs['session_id']}/snapshot").json()
    local = {i["name"]: i["value"] for i in snap["storage_state"]["origins"][0]["localStorage"]}
    assert json.loads(local["gomail_config"]) == {"run_id": "run-7", "task_id": TASK}

    sid = obs["session_id"]
    mid = http.post(f"/sessions/{sid}/validate").json()
    assert mid["success"] is False and mid["finish_state"]["differences"]["emails"]["updated"] == []

    step(http, sid, action="left_click", element_id="delete-1")
    out = step(http, sid, action="terminate", status="success")
    assert out["terminated"]
    assert out["info"]["task_success"] is True, out["info"]["validation"]
    assert out["reward"] == 1.0
    assert out["info"]["finish_state"]["differences"]["emails"]["updated"] == [{"id": "1", "trash": True}]
    assert any("eval_gomail_24.py" in d and "SUCCESS" in d for d in out["info"]["validation"])


def test_real_task_failure_and_replay_fork(http):
    sid = create(http, task_id=TASK)["observation"]["session_id"]
    parent = step(http, sid, action="left_click", element_id="delete-2")["observation"]  # the wrong email

    fork = http.post(f"/sessions/{sid}/fork", json={"n": 1}).json()
    assert fork["method"] == "replay"  # hosted REAL sites: reset + replay the action prefix
    child = fork["sessions"][0]["observation"]
    assert child["screenshot"]["sha256"] == parent["screenshot"]["sha256"]

    for s in (sid, child["session_id"]):
        out = step(http, s, action="terminate", status="success")
        assert out["info"]["task_success"] is False and out["reward"] == 0.0
        assert any("FAILURE" in d for d in out["info"]["validation"])


def test_real_tasks_listed(http):
    tasks = http.get("/tasks", params={"domain": "gomail"}).json()
    ids = {t["id"] for t in tasks}
    assert TASK in ids and all(t["website"]["id"] == "gomail" for t in tasks)
    assert http.post("/sessions", json={"task_id": "v2.nosuchsite-1"}).status_code == 404
    assert http.post("/sessions", json={"task_id": "v9.gomail-1"}).status_code == 404


def test_real_snapshot_fork_when_configured(site, tmp_path):
    from halo_env.backends.real import RealBackend
    from tests.env.fixtures import EnvServer, client, settings_for

    settings = settings_for(tmp_path, real_base_url=site.url, real_fork_method="snapshot")
    with EnvServer(settings, [RealBackend(settings)]) as server, client(server) as http:
        sid = create(http, task_id=TASK)["observation"]["session_id"]
        parent = step(http, sid, action="left_click", element_id="delete-1")["observation"]
        fork = http.post(f"/sessions/{sid}/fork", json={"n": 1}).json()
        assert fork["method"] == "snapshot"
        child = fork["sessions"][0]["observation"]
        assert child["screenshot"]["sha256"] == parent["screenshot"]["sha256"]
        out = step(http, child["session_id"], action="terminate", status="success")
        assert out["info"]["task_success"] is True  # the fork's /finish carries the parent's deletion
