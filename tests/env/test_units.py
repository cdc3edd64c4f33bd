"""Fast tier: allowlist rules, key names, registry snapshot, snapshot validation, REAL verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from halo.schemas import Snapshot
from halo_env import browser_state, registry
from halo_env.allowlist import NetworkGuard, origin_of
from halo_env.backends.real import RealBackend, evaluate_with_agisdk
from halo_env.executor import normalize_key
from tests.env.fixtures import settings_for


def test_origins_compare_scheme_host_and_port():
    assert origin_of("http://127.0.0.1:8300/gomail/?x=1") == "http://127.0.0.1:8300"
    assert origin_of("https://Example.com/a") == "https://example.com:443"
    assert origin_of("ws://127.0.0.1:8300/socket") == "http://127.0.0.1:8300"
    assert origin_of("file:///etc/passwd") is None
    assert origin_of("http://[::1]:99999/") is None  # invalid port

    guard = NetworkGuard()
    guard.configure({"http://127.0.0.1:8300/gomail/"})
    assert guard.allows("http://127.0.0.1:8300/gomail/finish")
    assert guard.allows("ws://127.0.0.1:8300/live")
    assert guard.allows("data:image/png;base64,AAAA") and guard.allows("about:blank")
    for url in (
        "http://127.0.0.1:6379/",
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:8000/v1/load_lora_adapter",
        "http://localhost:8300/",
        "https://127.0.0.1:8300/",
        "file:///etc/passwd",
        "chrome://settings",
        "javascript:alert(1)",
    ):
        assert not guard.allows(url), url
    assert NetworkGuard().allows("http://127.0.0.1:8300/") is False  # nothing before configure()


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("ctrl", "Control"),
        ("Return", "Enter"),
        ("esc", "Escape"),
        ("Page_Down", "PageDown"),
        ("a", "a"),
        ("F5", "F5"),
        ("cmd", "Meta"),
        ("space", " "),
        ("ArrowLeft", "ArrowLeft"),
        ("KeyA", "KeyA"),
        ("+", "+"),
    ],
)
def test_key_names(name, key):
    assert normalize_key(name) == key


@pytest.mark.parametrize("name", ["NotAKey", "Hyper_L", "ctrl+a", "F13", "Escape2"])
def test_unknown_keys(name):
    assert normalize_key(name) is None


def test_registry_snapshot(tmp_path: Path):
    out = tmp_path / "configs" / "real_v2_task_registry.json"
    count = registry.snapshot_real_tasks(out)
    data = json.loads(out.read_text())
    assert count == data["count"]
    assert data["version"] == "v2" and data["agisdk_version"] == "0.3.5"
    ids = [t["id"] for t in data["tasks"]]
    assert data["count"] == len(ids) == len(registry.real_task_ids()) > 100
    gomail = next(t for t in data["tasks"] if t["id"] == "v2.gomail-24")
    assert gomail["evals"] == [{"script": "eval_gomail_24.py"}]
    assert len(gomail["eval_script_sha256"]["eval_gomail_24.py"]) == 64
    # The committed snapshot is what agisdk 0.3.5 ships.
    committed = Path(__file__).resolve().parents[2] / "configs" / "real_v2_task_registry.json"
    assert json.loads(committed.read_text()) == data


def test_real_ids_and_urls(tmp_path: Path):
    with pytest.raises(KeyError):
        registry.get_real_task("v2.../secrets")
    with pytest.raises(KeyError):
        registry.get_real_task("v2.gomail-999")
    task = registry.get_real_task("v2.gomail-24")
    hosted = RealBackend(settings_for(tmp_path))
    assert hosted.site_url(task).startswith("https://") and hosted.site_url(task).endswith("/")
    local = RealBackend(settings_for(tmp_path, real_base_url="http://127.0.0.1:9000/"))
    assert local.site_url(task) == "http://127.0.0.1:9000/gomail/"
    assert (
        local.config_url(task, "r1") == "http://127.0.0.1:9000/gomail/config?run_id=r1&task_id=v2.gomail-24&latency=0"
    )
    per_site = RealBackend(settings_for(tmp_path, real_site_urls={"gomail": "http://h:1"}))
    assert per_site.site_url(task) == "http://h:1/"


def _state(updated: list[dict]) -> dict:
    return {
        "initialfinaldiff": {"added": {}, "updated": {}, "deleted": {}},
        "differences": {"emails": {"updated": updated}},
    }


def test_real_verdicts_come_from_agisdk_eval_scripts():
    from agisdk.REAL.browsergym.webclones.task_config import TaskConfig

    config = TaskConfig("gomail-24", "v2")
    ok = evaluate_with_agisdk(config, "v2.gomail-24", _state([{"id": "1", "trash": True}]), None, False, "K")
    assert ok.success is True and ok.reward == 1.0 and "SUCCESS" in ok.details[0]
    bad = evaluate_with_agisdk(config, "v2.gomail-24", _state([{"id": "2", "trash": True}]), None, False, "K")
    assert bad.success is False and bad.reward == 0.0 and "FAILURE" in bad.details[0]


def test_llm_evals_without_a_key_are_not_evaluable(tmp_path: Path):
    from agisdk.REAL.browsergym.webclones.task_config import TaskConfig

    task = {
        "id": "demo-1",
        "goal": "How many unread emails?",
        "website": {"id": "gomail", "url": "http://x/"},
        "evals": [
            {"type": "jmespath", "query": "count", "expected_value": 3},
            {"type": "llm_boolean", "rubric": "says three"},
        ],
        "points": 1,
        "difficulty": "easy",
        "challengeType": "retrieval",
    }
    path = tmp_path / "demo-1.json"
    path.write_text(json.dumps(task))
    config = TaskConfig(str(path), version="v2", is_path=True)
    passed = evaluate_with_agisdk(config, "v2.demo-1", {"count": 3}, "three", False, "OPENAI_API_KEY")
    assert passed.success is None and passed.reward == 0.0 and "not evaluable" in passed.details[-1]
    config = TaskConfig(str(path), version="v2", is_path=True)
    failed = evaluate_with_agisdk(config, "v2.demo-1", {"count": 4}, "four", False, "OPENAI_API_KEY")
    assert failed.success is False  # another eval failed: a failure whatever the LLM would say


def _snapshot(**storage) -> Snapshot:
    return Snapshot(task_id="fixture.actions", url="http://127.0.0.1:1/a.html", step=2, storage_state=storage)


def test_snapshot_round_trip_and_validation():
    state = {
        "url": "http://127.0.0.1:1/a.html",
        "cookies": [{"name": "c", "value": "1", "domain": "127.0.0.1", "path": "/"}],
        "page": {
            "origin": "http://127.0.0.1:1",
            "local": {"k": "v"},
            "session": {"s": "t"},
            "scroll": {"x": 0, "y": 40},
            "scrolled": [],
            "fields": [{"path": "html > body > input:nth-of-type(1)", "value": "draft"}],
            "focus": None,
            "selection": None,
        },
        "pointer": [10.0, 20.0],
    }
    snap = browser_state.to_snapshot(state, "fixture.actions", 2, [], None, max_steps=9, run_id="r")
    assert snap.storage_state["origins"][0]["localStorage"] == [{"name": "k", "value": "v"}]
    assert snap.session_storage == {"http://127.0.0.1:1": {"s": "t"}}
    back = browser_state.from_snapshot(Snapshot.model_validate(snap.model_dump(mode="json")))
    assert back["page"]["local"] == {"k": "v"} and back["page"]["session"] == {"s": "t"}
    assert back["page"]["fields"][0]["value"] == "draft" and back["pointer"] == [10.0, 20.0]
    assert back["cookies"][0]["name"] == "c"

    for bad in (
        {"cookies": "x"},
        {"cookies": [{"name": "c", "value": "1"}]},  # neither url nor domain/path
        {"origins": 5},
        {"halo_page": {"fields": 7}},
        {"halo_page": {"scroll": {"x": "far"}}},
    ):
        with pytest.raises(ValidationError):
            browser_state.from_snapshot(_snapshot(**bad))


def test_a_state_is_rewound_only_into_its_own_clone_app_document():
    """A parked page can take a state only when it shows the same app document (the hash may
    differ: the app routes on it) and the state was captured on a page that mounts a render."""
    app = "http://127.0.0.1:8300/gomail/"
    state = {"url": f"{app}#/email/e01", "page": {"app": app}}
    assert browser_state.rewind_url(state) == app
    assert browser_state.rewind_url({"url": f"{app}finish", "page": {"app": app}}) is None
    assert browser_state.rewind_url({"url": app, "page": {"app": None}}) is None  # no render: not a clone
    assert browser_state.rewind_url({"url": app, "page": None}) is None


def test_a_page_that_loaded_reals_data_is_not_rewound_into_a_local_task():
    """The clones read `config.dataset` once, at load: the parked page's key carries it."""
    app = "http://127.0.0.1:8300/omnizon/"

    def state(config: dict) -> dict:
        meta = json.dumps({"task_id": "t", "run_id": "0", "seed": 0, "config": config})
        return {
            "url": f"{app}#/",
            "page": {"app": app, "local": {"halo:omnizon:meta": meta, "halo:omnizon:state": "{}"}},
        }

    real, local = browser_state.rewind_key(state({"dataset": "real"})), browser_state.rewind_key(state({}))
    assert real == f"{app} dataset=real" and local == app and real != local
    assert browser_state.rewind_key({"url": f"{app}#/", "page": {"app": app}}) == app  # no storage: the document
    broken = {"url": f"{app}#/", "page": {"app": app, "local": {"halo:omnizon:meta": "{not json"}}}
    assert browser_state.rewind_key(broken) == app
    assert browser_state.rewind_key({"url": f"{app}finish", "page": {"app": app}}) is None
