"""The clones' task registry and evaluation through agisdk's own WebCloneEvaluator (fast tier)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from halo.schemas import Action, ActionType, Task
from halo_sites.tasks import (
    REAL_PREFIX,
    SITES_DIR,
    SOLUTIONS_DIR,
    TASK_PREFIX,
    evaluate,
    get_task,
    load_solution,
    load_tasks,
    site_names,
)

WRONG_DIR = Path(__file__).parent / "wrong_solutions"
ALL_IDS = [t.id for t in load_tasks()]


def test_every_site_has_at_least_ten_tasks_spanning_difficulties() -> None:
    assert {"playground", "gomail", "gocalendar"} <= set(site_names())
    for site in site_names():
        tasks = load_tasks(site)
        own = [t for t in tasks if t.id.startswith(TASK_PREFIX)]
        # Ten at least; a site whose REAL v2 set is small (marrisuite has one task) has three of its own.
        assert len(tasks) >= 10 or len(own) >= 3, site
        assert all(t.domain == site and t.website.url == f"/{site}/" for t in tasks)
        assert len({t.difficulty for t in tasks}) >= 2, site  # REAL's staynb set has no easy task
    for site in ("playground", "gomail", "gocalendar", "omnizon", "zilloft"):
        assert {"easy", "medium"} <= {t.difficulty for t in load_tasks(site)}, site
    for site in ("gomail", "gocalendar"):
        kinds = {t.challengeType for t in load_tasks(site)}
        assert {"action", "retrieve"} <= kinds, site
        assert "hard" in {t.difficulty for t in load_tasks(site)}


@pytest.mark.parametrize("site", ["omnizon", "zilloft"])
def test_omnizon_and_zilloft_have_twelve_local_tasks_from_easy_to_hard_with_retrievals(site: str) -> None:
    tasks = [t for t in load_tasks(site) if t.id.startswith(TASK_PREFIX)]  # REAL v2 offline: test_real_offline.py
    assert [t.id for t in tasks] == [f"local.{site}-{n}" for n in range(1, 13)]
    assert {t.difficulty for t in tasks} == {"easy", "medium", "hard"}
    kinds = [t.challengeType for t in tasks]
    assert kinds.count("retrieve") >= 2 and "action" in kinds
    assert any(e.get("type") == "jmespath" for t in tasks for e in t.evals)


def test_task_ids_follow_the_contract_and_are_ordered_numerically() -> None:
    assert len(ALL_IDS) == len(set(ALL_IDS))
    assert all(re.fullmatch(r"(local|real-offline)\.[a-z]+-\d+", i) for i in ALL_IDS)
    for prefix in (TASK_PREFIX, REAL_PREFIX):
        numbers = [int(t.id.rsplit("-", 1)[1]) for t in load_tasks("gomail") if t.id.startswith(prefix)]
        assert numbers == sorted(numbers)


def test_get_task_and_unknown_ids() -> None:
    task = get_task("local.gomail-1")
    assert isinstance(task, Task) and task.domain == "gomail"
    task.goal = "mutated"  # a copy: the registry is not changed by callers
    assert get_task("local.gomail-1").goal != "mutated"
    with pytest.raises(KeyError):
        get_task("local.gomail-999")
    with pytest.raises(KeyError):
        get_task("v2.gomail-1")


def test_task_files_are_agisdk_v2_json() -> None:
    for path in SITES_DIR.glob("*/tasks/*.json"):
        raw = json.loads(path.read_text())
        assert {
            "id",
            "goal",
            "website",
            "difficulty",
            "challengeType",
            "possible",
            "evals",
            "points",
            "version",
        } <= set(raw)
        assert raw["version"] == "v2"


@pytest.mark.parametrize("task_id", ALL_IDS)
def test_every_task_has_a_reference_and_a_wrong_solution(task_id: str) -> None:
    solution = load_solution(task_id)
    task = get_task(task_id)
    # A Playground episode ends at its one submission (the page reports `done`), so its solution
    # ends with the submitting action; test_replay checks that the last action ends the episode.
    one_shot = task.website.id == "playground" and task.config.get("family") != "read"
    assert solution and (solution[-1].action in (ActionType.TERMINATE, ActionType.ANSWER) or one_shot)
    assert all(a.action not in (ActionType.TERMINATE, ActionType.ANSWER) for a in solution[:-1])
    assert (solution[-1].action is ActionType.ANSWER) == (task.challengeType == "retrieve")
    wrong = [Action.model_validate(a) for a in json.loads((WRONG_DIR / f"{task_id}.json").read_text())]
    assert wrong and wrong != solution


def test_no_solution_without_a_task() -> None:
    assert {p.stem for p in SOLUTIONS_DIR.glob("*.json")} == set(ALL_IDS)


def test_playground_has_fixed_and_moving_click_families() -> None:
    fixed = get_task("local.playground-1").config
    moving = get_task("local.playground-2").config
    assert fixed["family"] == moving["family"] == "click"
    assert len(fixed["slots"]) == 1 and len(moving["slots"]) >= 4
    for task in load_tasks("playground"):
        assert isinstance(task.config.get("milestones"), list), task.id


# ---- evaluation through agisdk ------------------------------------------------------------------


def _state(updated: dict | None = None, emails_added: list | None = None, events: dict | None = None) -> dict:
    return {
        "site": "x",
        "initialfinaldiff": {"added": {}, "updated": updated or {}, "deleted": {}},
        "differences": {
            "emails": {"added": emails_added or [], "updated": [], "deleted": []},
            "events": events or {"added": [], "updated": [], "deleted": []},
        },
        "progress": {},
    }


def test_evaluate_playground_script_success_and_failure() -> None:
    task = get_task("local.playground-1")
    ok = evaluate(task, _state({"submission": {"button": "Submit", "fields": {}, "selected": None, "checked": []}}))
    assert ok.success is True and ok.reward == 1.0 and ok.task_id == task.id
    assert ok.details and ok.details[0].startswith("ok: eval_playground_1.py")
    bad = evaluate(task, _state({"submission": {"button": "Cancel"}}))
    assert bad.success is False and bad.reward == 0.0
    assert "FAILURE" in bad.details[0]
    assert evaluate(task, _state()).success is False


def test_evaluate_gomail_send_task() -> None:
    task = get_task("local.gomail-5")
    sent = {
        "id": "new-1",
        "to": ["sam.lee@acme.com"],
        "cc": [],
        "subject": "Lunch on Friday",
        "content": "Are you free for lunch on Friday?",
        "sent": True,
    }
    assert evaluate(task, _state(emails_added=[sent])).success is True
    assert evaluate(task, _state(emails_added=[{**sent, "subject": "Lunch"}])).success is False
    assert evaluate(task, _state(emails_added=[{**sent, "sent": False}])).success is False


def test_evaluate_gocalendar_delete_task() -> None:
    task = get_task("local.gocalendar-1")
    dentist = {"id": "ev06", "title": "Dentist appointment"}
    assert evaluate(task, _state(events={"added": [], "updated": [], "deleted": [dentist]})).success is True
    two = [dentist, {"id": "ev13", "title": "Yoga class"}]
    assert evaluate(task, _state(events={"added": [], "updated": [], "deleted": two})).success is False


def test_evaluate_retrieval_answers_by_jmespath_and_script() -> None:
    code = get_task("local.gomail-4")  # jmespath exact match on the answer
    assert evaluate(code, _state(), "K7Q2ZP").success is True
    assert evaluate(code, _state(), "k7q2zp").success is False
    assert evaluate(code, _state(), None).success is False
    date = get_task("local.gomail-9")  # script that normalises the answer
    assert evaluate(date, _state(), "It is on July 20, 2024").success is True
    assert evaluate(date, _state(), "2024-07-21").success is False


def test_evaluate_keeps_the_finish_state_and_does_not_mutate_it() -> None:
    state = _state()
    result = evaluate(get_task("local.gomail-4"), state, "K7Q2ZP")
    assert "answer" not in state
    assert result.finish_state == state
