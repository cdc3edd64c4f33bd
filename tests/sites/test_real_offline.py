"""REAL v2 offline: REAL's own v2 tasks on the clones, judged by agisdk's own eval scripts.

Fast: the registry takes each supported task's goal and evals from agisdk's task file unchanged,
every one of agisdk's v2 tasks of a cloned site is either supported or listed with its reason, and
the scripts the evaluator runs are the installed agisdk's files, byte for byte the ones pinned in
configs/real_v2_task_registry.json (the registry the reference solutions were verified against).
Slow (Chromium, through the environment service, as test_replay.py): FAILURE at reset, SUCCESS
after the reference solution, FAILURE after the wrong one. `make test` replays a fixed sample of
each site's tasks (its first, middle and last by number); the rest carry the `full_replay` marker
and run with `make test-replay` (every task, before each release; docs/testing.md).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import pytest

from halo.schemas import Action
from halo_sites.tasks import (
    REAL_PREFIX,
    SOLUTIONS_DIR,
    agisdk_tasks_dir,
    evaluate,
    get_task,
    load_tasks,
    real_offline_manifest,
    site_names,
)
from tests.sites.conftest import replay, replay_params, replay_sample

ROOT = Path(__file__).resolve().parents[2]
WRONG_DIR = Path(__file__).parent / "wrong_solutions"
REAL_IDS = [t.id for t in load_tasks() if t.id.startswith(REAL_PREFIX)]


REPLAYED_BY_MAKE_TEST = replay_sample(REAL_IDS)
REPLAY_PARAMS = replay_params(REAL_IDS)


def _agisdk_task(task_id: str) -> dict:
    return json.loads((agisdk_tasks_dir() / f"{task_id.removeprefix(REAL_PREFIX)}.json").read_text())


def test_every_real_task_of_a_cloned_site_is_supported_or_has_a_reason() -> None:
    for site in site_names():
        manifest = real_offline_manifest(site)
        listed = set(manifest["supported"]) | set(manifest["unsupported"])
        if not listed:
            continue
        assert listed == {p.stem for p in agisdk_tasks_dir().glob(f"{site}-*.json")}, site
        assert all(isinstance(r, str) and len(r) > 10 for r in manifest["unsupported"].values()), site


@pytest.mark.parametrize("task_id", REAL_IDS)
def test_goal_and_evals_are_agisdks_and_solutions_exist(task_id: str) -> None:
    task, raw = get_task(task_id), _agisdk_task(task_id)
    assert task.goal == raw["goal"] and task.evals == raw["evals"]
    assert (task.difficulty, task.challengeType) == (raw["difficulty"], raw["challengeType"])
    assert task.website.url == f"/{task.domain}/" and task.config["dataset"] == "real"
    assert (SOLUTIONS_DIR / f"{task_id}.json").is_file() and (WRONG_DIR / f"{task_id}.json").is_file()


def test_scripts_are_the_installed_agisdks_byte_for_byte() -> None:
    pinned = {t["id"]: t for t in json.loads((ROOT / "configs/real_v2_task_registry.json").read_text())["tasks"]}
    scripts_dir = agisdk_tasks_dir().parent / "eval_scripts"
    for task_id in REAL_IDS:
        real_id = "v2." + task_id.removeprefix(REAL_PREFIX)
        for ev in get_task(task_id).evals:
            installed = hashlib.sha256((scripts_dir / ev["script"]).read_bytes()).hexdigest()
            assert installed == pinned[real_id]["eval_script_sha256"][ev["script"]], (task_id, ev["script"])


def test_the_replay_sample_covers_every_site_and_is_stable() -> None:
    ids = ["real-offline.a-1", "real-offline.a-10", "real-offline.a-2", "real-offline.a-3", "real-offline.b-7"]
    assert replay_sample(ids) == {"real-offline.a-1", "real-offline.a-3", "real-offline.a-10", "real-offline.b-7"}
    assert replay_sample(["local.a-1", "local.a-2"]) == {"local.a-1", "local.a-2"}
    assert replay_sample([f"local.playground-{i}" for i in range(1, 13)]) == {
        f"local.playground-{i}" for i in range(1, 13)
    }
    sites = {t.removeprefix(REAL_PREFIX).rsplit("-", 1)[0] for t in REAL_IDS}
    assert {t.removeprefix(REAL_PREFIX).rsplit("-", 1)[0] for t in REPLAYED_BY_MAKE_TEST} == sites


def test_evaluation_runs_the_installed_script() -> None:
    """The verdict's detail names the script agisdk ran; an empty state fails it, as REAL would."""
    task = get_task(REAL_IDS[0])
    result = evaluate(task, {"initialfinaldiff": {"added": {}, "updated": {}, "deleted": {}}, "differences": {}})
    assert result.success is False and result.details[0].startswith(f"failed: {task.evals[0]['script']}: FAILURE")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("task_id", REPLAY_PARAMS)
def test_reference_solution_succeeds_and_wrong_one_fails(env: httpx.Client, task_id: str) -> None:
    solution = [Action.model_validate(a) for a in json.loads((SOLUTIONS_DIR / f"{task_id}.json").read_text())]
    solved = replay(env, task_id, solution, check_reset=True)
    assert solved["info"].get("task_success") is True, f"{task_id}: {solved['info']}"
    wrong = [Action.model_validate(a) for a in json.loads((WRONG_DIR / f"{task_id}.json").read_text())]
    failed = replay(env, task_id, wrong, check_reset=False)
    assert failed["info"].get("task_success") is False, f"{task_id}: the wrong solution passed"
