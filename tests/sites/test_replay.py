"""Every task's reference solution, replayed through the environment service in real Chromium.

The clone server and the environment service run as their own processes on free ports, exactly as
in the stack. For every local task: FAILURE at reset, SUCCESS after the reference solution, FAILURE
after the wrong solution in ``tests/sites/wrong_solutions/``. A task without a passing reference
solution does not ship.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from halo.schemas import Action
from halo_sites.tasks import load_solution, load_tasks
from tests.conftest import REDIS_URL, free_port, start_service

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WRONG_DIR = Path(__file__).parent / "wrong_solutions"
TASK_IDS = [t.id for t in load_tasks()]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    if importlib.util.find_spec("halo_env") is None:
        pytest.skip("the environment service (halo_env) is not installed")
    if not shutil.which("/usr/bin/chromium"):
        pytest.skip("Chromium is not installed")
    procs: list[subprocess.Popen] = []
    data_dir = tmp_path_factory.mktemp("env-data")
    try:
        sites_port, env_port = free_port(), free_port()
        sites_url, env_url = f"http://127.0.0.1:{sites_port}", f"http://127.0.0.1:{env_port}"
        procs.append(start_service("halo_sites", {"HALO_SITES_PORT": str(sites_port)}, f"{sites_url}/ready"))
        env_vars = {
            "HALO_ENV_PORT": str(env_port),
            "HALO_ENV_SITES_URL": sites_url,
            "HALO_REDIS_URL": REDIS_URL,
            "HALO_DATA_DIR": str(data_dir),
        }
        procs.append(start_service("halo_env", env_vars, f"{env_url}/ready"))
        client = httpx.Client(base_url=env_url, timeout=120)
        if client.post("/sessions", json={}).status_code in (404, 405):
            pytest.skip("the environment service has no sessions API yet")
        yield client
        client.close()
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _run(env: httpx.Client, task_id: str, actions: list[Action], check_reset: bool) -> dict:
    r = env.post("/sessions", json={"task_id": task_id, "max_steps": len(actions) + 5, "seed": 0})
    assert r.status_code == 200, r.text
    session = r.json()["observation"]["session_id"]
    try:
        if check_reset:
            at_reset = env.post(f"/sessions/{session}/validate")
            assert at_reset.status_code == 200, at_reset.text
            assert at_reset.json()["success"] is False, f"{task_id}: already solved at reset"
        last: dict = {}
        for i, action in enumerate(actions):
            step = env.post(f"/sessions/{session}/step", json={"action": action.model_dump(mode="json")})
            assert step.status_code == 200, step.text
            last = step.json()
            error = last["observation"].get("last_action_error")
            assert error is None, f"{task_id} step {i} {action.short()}: {error}"
        assert last["terminated"] is True, f"{task_id}: the episode did not end with the last action"
        return last
    finally:
        env.delete(f"/sessions/{session}")


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reference_solution_succeeds_and_wrong_one_fails(env: httpx.Client, task_id: str) -> None:
    solved = _run(env, task_id, load_solution(task_id), check_reset=True)
    assert solved["info"].get("task_success") is True, f"{task_id}: {solved['info']}"
    assert solved["info"].get("finish_state", {}).get("task_id") == task_id
    wrong = [Action.model_validate(a) for a in json.loads((WRONG_DIR / f"{task_id}.json").read_text())]
    failed = _run(env, task_id, wrong, check_reset=False)
    assert failed["info"].get("task_success") is False, f"{task_id}: the wrong solution passed"
