"""Contract test on the project's offline clones (halo_sites): reference solutions run through the
env service succeed by the clones' own evals, and a fork of a clone session is exact."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.env.fixtures import EnvServer, ThreadServer, client, settings_for
from tests.env.helpers import create, rel, step

pytestmark = [pytest.mark.slow, pytest.mark.browser]

sites_tasks = pytest.importorskip("halo_sites.tasks")


def _first_task_per_site() -> list[str]:
    chosen: dict[str, str] = {}
    for task in sites_tasks.load_tasks():
        if task.domain not in chosen and (sites_tasks.SOLUTIONS_DIR / f"{task.id}.json").is_file():
            chosen[task.domain] = task.id
    return sorted(chosen.values())


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EnvServer, str]]:
    from halo.settings.sites import SitesSettings
    from halo_sites.app import create_app as create_sites

    port = free_port()
    with ThreadServer(create_sites(SitesSettings(host="127.0.0.1", port=port)), "127.0.0.1", port) as sites:
        settings = settings_for(Path(tmp_path_factory.mktemp("env")), sites_url=sites.url)
        with EnvServer(settings) as env:  # the default backends: local clones and REAL
            yield env, sites.url


@pytest.mark.parametrize("task_id", _first_task_per_site())
def test_reference_solution_succeeds(clones, task_id):
    env, _ = clones
    solution = json.loads((sites_tasks.SOLUTIONS_DIR / f"{task_id}.json").read_text())
    with client(env) as http:
        obs = create(http, task_id=task_id)["observation"]
        assert obs["site_state"] is not None, "clones expose window.__HALO__.finish()"
        out = None
        for action in solution:
            out = step(http, obs["session_id"], **action)
            assert out["observation"]["last_action_error"] is None, (action, out["observation"]["last_action_error"])
        assert out is not None and out["terminated"]
        assert out["info"]["task_success"] is True, out["info"].get("validation")
        http.delete(f"/sessions/{obs['session_id']}")


def _park_a_page(http, task_id: str, action: dict) -> None:
    """Leave a page parked at the task's app, in another state than the reset's, cursor moved:
    a closed session's context stays at its app for the next rewind."""
    sid = create(http, task_id=task_id, run_id="another-run")["observation"]["session_id"]
    step(http, sid, **action)
    http.delete(f"/sessions/{sid}")


def _same_from_here(http, a_sid: str, b_sid: str, actions: list[dict]) -> None:
    """The same actions in two sessions give the same screenshots and site states, step by step.
    A `wait` first: a rewound page's first observation reuses its source's screenshot when the page
    reads the same, so the pixels of the re-entered state itself are compared here."""
    for action in [{"action": "wait", "time": 0}, *actions]:
        a = step(http, a_sid, **action)
        b = step(http, b_sid, **action)
        assert a["observation"]["screenshot"]["sha256"] == b["observation"]["screenshot"]["sha256"], action
        assert a["observation"]["site_state"] == b["observation"]["site_state"], action
        assert a["terminated"] == b["terminated"]
        if a["terminated"]:
            assert a["info"]["task_success"] == b["info"]["task_success"]
            break


@pytest.mark.parametrize("method", ["snapshot", "rewind", "restore"])
@pytest.mark.parametrize("task_id", _first_task_per_site())
def test_clone_fork_is_exact(clones, task_id, method):
    """Re-enter the state by each method (a snapshot fork, a rewind fork, a restore of the session's
    snapshot, which rewinds too), then run the reference solution in parent and copy side by side.
    A rewind goes into a page parked at the app by an earlier session, which had moved its cursor
    and changed the page: nothing of that may show."""
    env, _ = clones
    solution = json.loads((sites_tasks.SOLUTIONS_DIR / f"{task_id}.json").read_text())
    actions = [a for a in solution if a["action"] not in ("terminate", "answer")]
    with client(env) as http:
        parent = create(http, task_id=task_id)["observation"]
        sid = parent["session_id"]
        if method != "snapshot":
            _park_a_page(http, task_id, actions[-1])
        if len(actions) > 1:  # fork mid-episode when the solution is long enough
            parent = step(http, sid, **actions.pop(0))["observation"]
        if method == "restore":
            restored = http.post("/sessions/restore", json=http.get(f"/sessions/{sid}/snapshot").json())
            assert restored.status_code == 200, restored.text
            assert restored.json()["info"]["method"] == "rewind"
            child = restored.json()["observation"]
        else:
            fork = http.post(f"/sessions/{sid}/fork", json={"n": 1, "method": method})
            assert fork.status_code == 200, fork.text
            assert fork.json()["method"] == method
            child = fork.json()["sessions"][0]["observation"]
        assert child["site_state"] == parent["site_state"]
        assert child["axtree"] == parent["axtree"]
        assert child["screenshot"]["sha256"] == parent["screenshot"]["sha256"]
        _same_from_here(http, sid, child["session_id"], actions)
        for s in (sid, child["session_id"]):
            http.delete(f"/sessions/{s}")


@pytest.mark.parametrize("task_id", _first_task_per_site())
def test_a_reset_by_rewind_equals_the_sites_reset(clones, task_id):
    """A repeated reset of a task rewinds a parked page to the state the first reset's /config
    built: the same screen, ids and site state, and the same after the reference solution's steps."""
    env, _ = clones
    solution = json.loads((sites_tasks.SOLUTIONS_DIR / f"{task_id}.json").read_text())
    actions = [a for a in solution if a["action"] not in ("terminate", "answer")]
    with client(env) as http:
        first = create(http, task_id=task_id, run_id="rewind-test")  # a run's first reset: its /config
        sid = first["observation"]["session_id"]
        assert first["info"]["method"] == "setup"
        _park_a_page(http, task_id, actions[-1])
        second = create(http, task_id=task_id, run_id="rewind-test")
        assert second["info"]["method"] == "rewind"
        a, b = first["observation"], second["observation"]
        assert b["screenshot"]["sha256"] == a["screenshot"]["sha256"]
        assert b["site_state"] == a["site_state"] and b["axtree"] == a["axtree"] and b["url"] == a["url"]
        _same_from_here(http, sid, b["session_id"], actions)
        for s in (sid, b["session_id"]):
            http.delete(f"/sessions/{s}")


def test_reset_seed_reaches_the_site_and_survives_a_fork(clones):
    """The episode's seed picks the clone's layout: local.playground-2 puts its button in slot
    ``seed % 4``. A reset with seed 1 must show slot 1 (not seed 0's slot), and so must its fork."""
    env, _ = clones
    slots = sites_tasks.get_task("local.playground-2").config["slots"]
    with client(env) as http:
        shots = set()
        for seed in range(len(slots)):
            obs = create(http, task_id="local.playground-2", seed=seed)["observation"]
            shots.add(obs["screenshot"]["sha256"])
            http.delete(f"/sessions/{obs['session_id']}")
        assert len(shots) == len(slots), "every seed of a 4-layout task looks different"

        sid = create(http, task_id="local.playground-2", seed=1)["observation"]["session_id"]
        fork = http.post(f"/sessions/{sid}/fork", json={"n": 1})
        assert fork.status_code == 200, fork.text
        child = fork.json()["sessions"][0]["observation"]["session_id"]
        missed = step(http, sid, action="left_click", coordinate=rel(*slots[0]))  # seed 0's place
        assert missed["terminated"] and missed["info"]["task_success"] is False
        hit = step(http, child, action="left_click", coordinate=rel(*slots[1]))
        assert hit["terminated"] and hit["info"]["task_success"] is True, hit["info"].get("validation")
        for s in (sid, child):
            http.delete(f"/sessions/{s}")


def test_a_step_group_fork_rewinds_the_parked_pages_and_loads_the_rest_all_equal_to_the_parent(tmp_path):
    """A fork of n children with fewer pages parked at the app than n: that many children rewind
    (they take no fork slot, so they start at once), the rest load by snapshot one at a time
    (fork_parallelism 1). Every child reads and looks like the parent, and the same next action
    gives the same pixels everywhere."""
    from halo.settings.sites import SitesSettings
    from halo_sites.app import create_app as create_sites

    task_id = "local.playground-6"  # type a word, then submit: the first steps do not end the episode
    port = free_port()
    with ThreadServer(create_sites(SitesSettings(host="127.0.0.1", port=port)), "127.0.0.1", port) as sites:
        settings = settings_for(tmp_path, sites_url=sites.url, parked_contexts=2, fork_parallelism=1)
        with EnvServer(settings) as env, client(env) as http:
            # Two sessions open at once, then closed: two pages parked at the app (one after the
            # other would rewind and park the same page twice).
            others = [create(http, task_id=task_id, run_id=f"other-{i}")["observation"]["session_id"] for i in (0, 1)]
            for other in others:
                step(http, other, action="left_click", coordinate=rel(700, 600))
                http.delete(f"/sessions/{other}")
            sid = create(http, task_id=task_id)["observation"]["session_id"]  # takes no parked page: a new run's reset
            step(http, sid, action="left_click", element_id="field-word")
            parent = step(http, sid, action="type", text="ban")["observation"]
            fork = http.post(f"/sessions/{sid}/fork", json={"n": 4})
            assert fork.status_code == 200, fork.text
            assert fork.json()["method"] == "snapshot"  # a mix reports the slower method
            children = fork.json()["sessions"]
            assert sorted(c["info"]["method"] for c in children) == ["rewind", "rewind", "snapshot", "snapshot"]
            for c in children:
                child = c["observation"]
                assert child["site_state"] == parent["site_state"] and child["axtree"] == parent["axtree"]
                assert child["screenshot"]["sha256"] == parent["screenshot"]["sha256"]
            after = [
                step(http, s, action="type", text="ana")
                for s in [sid] + [c["observation"]["session_id"] for c in children]
            ]
            assert len({a["observation"]["screenshot"]["sha256"] for a in after}) == 1
            assert len({json.dumps(a["observation"]["site_state"], sort_keys=True) for a in after}) == 1
            for s in [sid] + [c["observation"]["session_id"] for c in children]:
                http.delete(f"/sessions/{s}")
