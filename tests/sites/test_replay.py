"""Every task's reference solution, replayed through the environment service in real Chromium.

The clone server and the environment service run as their own processes on free ports, exactly as
in the stack (the ``env`` fixture in conftest.py). For every local task: FAILURE at reset, SUCCESS after the reference solution, FAILURE
after the wrong solution in ``tests/sites/wrong_solutions/``. A task without a passing reference
solution does not ship. `make test` replays each site's first, middle and last task (every
Playground task: the learning probes and end-to-end runs train on them); `make test-replay` all.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from halo.schemas import Action
from halo_sites.tasks import TASK_PREFIX, load_solution, load_tasks
from tests.sites.conftest import replay, replay_params

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WRONG_DIR = Path(__file__).parent / "wrong_solutions"
TASK_IDS = [t.id for t in load_tasks() if t.id.startswith(TASK_PREFIX)]  # REAL v2 offline: test_real_offline.py


REPLAY_PARAMS = replay_params(TASK_IDS)


@pytest.mark.parametrize("task_id", REPLAY_PARAMS)
def test_reference_solution_succeeds_and_wrong_one_fails(env: httpx.Client, task_id: str) -> None:
    solved = replay(env, task_id, load_solution(task_id), check_reset=True)
    assert solved["info"].get("task_success") is True, f"{task_id}: {solved['info']}"
    assert solved["info"].get("finish_state", {}).get("task_id") == task_id
    wrong = [Action.model_validate(a) for a in json.loads((WRONG_DIR / f"{task_id}.json").read_text())]
    failed = replay(env, task_id, wrong, check_reset=False)
    assert failed["info"].get("task_success") is False, f"{task_id}: the wrong solution passed"
