"""The run manager through the run API: what it refuses, what a run's status says, stop and resume.

Real Redis and the real app, manager and loop; the env is the in-process stand-in (its task
probe), vLLM's admin routes a stand-in (conftest), results come from a scripted worker, and the
learner is the tiny model already loaded (model loading is tested in tests/model).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from halo.policy_client import PolicyClient
from halo.schemas import RunSpec, RunState, RunStatus
from halo.schemas.policy_server import PolicyCapabilities, capabilities_key
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.api.app import create_app
from halo_trainer.api.runs import RunManager
from halo_trainer.config import load_defaults, profile_for, resolve
from tests.trainer.loop_harness import TIMEOUT_S, episode, infra, new_learner, scripted_worker
from tests.trainer.stand_ins import EnvStandIn

MODEL = "tiny-model-as-served"  # the trainer's model setting; the vLLM stand-in reports the same root


@dataclass
class Api:
    client: httpx.AsyncClient
    manager: RunManager
    env: EnvStandIn
    redis: aioredis.Redis
    settings: TrainerSettings


@pytest.fixture
async def api(clean_redis, vllm_admin, base_model, tmp_path, monkeypatch) -> AsyncIterator[Api]:
    vllm_admin.root = MODEL
    settings = TrainerSettings(data_dir=tmp_path, redis_url=clean_redis, policy_url=vllm_admin.url, model=MODEL)
    redis = aioredis.from_url(clean_redis)
    env = EnvStandIn({"local.playground-1": True, "local.playground-2": True, "v2.playground-9": False})
    policy = PolicyClient(vllm_admin.url, "halo-base", max_retries=0)
    manager = RunManager(settings, redis, policy, ScreenshotStore(tmp_path / "shots"), env)
    monkeypatch.setattr(manager, "_learner_parts", lambda cfg: (new_learner(base_model), None))
    app = create_app(settings)  # its lifespan (workers, auto-resume) is not started: the tests do that part
    app.state.manager = manager
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer")
    yield Api(client, manager, env, redis, settings)
    await manager.shutdown()
    # No run task outlives the test (one left would fail later on the Redis closed below).
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("run-") and not t.done()]
    await client.aclose()
    await policy.aclose()
    await redis.aclose()


async def wait_for_state(manager: RunManager, run_id: str, states: set[RunState], updates: int = 0) -> RunStatus:
    deadline = time.monotonic() + TIMEOUT_S  # a guard against a hang, not a speed target
    while time.monotonic() < deadline:
        status = await manager.registry.get(run_id)
        if status is not None and status.state in states and status.updates >= updates:
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} never reached {states}: {status}")


async def until_idle(manager: RunManager) -> None:
    """A run's status says it ended a moment before its `done` event is recorded; the trainer is
    busy until both are."""
    deadline = time.monotonic() + TIMEOUT_S
    while manager.busy() is not None:
        assert time.monotonic() < deadline, f"run {manager.busy()} never let the trainer go"
        await asyncio.sleep(0.05)


async def test_requests_the_manager_cannot_run_are_refused_with_a_clear_4xx_or_503(api: Api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the openai critic's default key variable
    cases = [
        ({"domain": "playground", "algorithm": "mcts", "critic": "openai"}, 422, "critic 'openai' needs an API key"),
        ({"domain": "playground", "simulations": 5}, 422, "simulations: settings of algorithm 'mcts'"),
        ({"domain": "playground", "tasks": ["local.playground-7"]}, 422, "unknown tasks for playground"),
        ({"domain": "gomail"}, 422, "no tasks for domain 'gomail'; the domains are playground"),
        ({"domain": "playground", "full_weights": ["vision_tower"]}, 422, "neither a preset"),
        ({"domain": "playground", "temperature": 0}, 422, "temperature"),
        ({"domain": "playground", "tis_cap": 0.5}, 422, "tis_cap"),
        ({"domain": "playground", "common_random_numbers": "maybe"}, 422, "common_random_numbers"),
        ({"domain": "playground", "describe_tools": "sometimes"}, 422, "describe_tools"),
        ({"domain": "playground", "seed_contrast": 1.5}, 422, "seed_contrast"),
        ({"domain": "playground", "epochs_per_batch": 2}, 422, "tis_cap=2.0 needs epochs_per_batch=1 (got 2)"),
        (
            {"domain": "playground", "seed_contrast": 1, "group_mode": "episode"},
            422,
            "seed_contrast=1.0 needs group_mode=step",
        ),
    ]
    for body, status, message in cases:
        response = await api.client.post("/runs", json=body)
        assert response.status_code == status, response.text
        assert message in response.json()["error"]
    api.env.down = True
    response = await api.client.post("/runs", json={"domain": "playground"})
    assert response.status_code == 503 and "cannot list and probe playground tasks" in response.json()["error"]
    # Nothing was created by any of them.
    assert await api.manager.registry.all() == [] and not (api.settings.runs_dir).exists()
    for path in ("/runs/nope", "/runs/nope/metrics"):
        assert (await api.client.get(path)).status_code == 404
    assert (await api.client.post("/runs/nope/stop", json={})).status_code == 404


async def test_a_run_defaults_file_broken_after_start_is_a_503_saying_so(api: Api, tmp_path):
    broken = tmp_path / "rl_config.yaml"
    broken.write_text("mcts:\n  rollout_depthh: 1\n")  # e.g. a knob a newer checkout added, misspelt
    api.manager.settings = api.manager.settings.model_copy(update={"rl_config": str(broken)})
    response = await api.client.post("/runs", json={"domain": "playground"})
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert "mcts.rollout_depthh is not a knob" in error and "restart the trainer" in error
    assert await api.manager.registry.all() == []


async def test_a_run_is_created_reports_its_progress_is_stopped_and_frees_the_trainer(api: Api):
    body = {"domain": "playground", "episodes": 1000, "eval_every": 0, "name": "manager"}
    response = await api.client.post("/runs", json=body)
    assert response.status_code == 201, response.text
    created = RunStatus.model_validate(response.json())
    assert created.state is RunState.PENDING and created.episodes_total == 1000
    # The default task set leaves out the task whose site did not answer, and says so.
    assert [r.task_id for r in created.tasks_left_out] == ["v2.playground-9"]
    assert "left out 1 of 3 playground tasks" in created.task_set_note
    config = json.loads((Path(created.run_dir) / "config.json").read_text())
    assert config["run"]["tasks"] == ["local.playground-1", "local.playground-2"]

    second = await api.client.post("/runs", json=body)
    assert second.status_code == 409 and created.run_id in second.json()["error"]

    worker_stop = asyncio.Event()
    worker = asyncio.create_task(scripted_worker(api.redis, api.settings, _played, worker_stop, []))
    try:
        running = await wait_for_state(api.manager, created.run_id, {RunState.RUNNING}, updates=2)
        stopped = await api.client.post(f"/runs/{created.run_id}/stop", json={})
        assert stopped.status_code == 200
        final = await wait_for_state(api.manager, created.run_id, {RunState.STOPPED})
    finally:
        worker_stop.set()
        await worker
    # The status reports the loop's progress: updates, versions, the adapter new samples use, metrics.
    assert running.policy_version == running.updates and running.adapter_name == f"{created.run_id}-v{running.updates}"
    assert running.episodes_done == 4 * running.updates  # 4 jobs an update, one episode each
    assert running.latest_metrics["rollout/episodes_done"] == running.episodes_done
    assert final.updates >= running.updates and final.error is None
    assert await api.redis.sismember(keys.STOPPED_RUNS, created.run_id)
    events = [json.loads(e) for e in await api.manager.registry.events(created.run_id, 0)]
    assert events[-1]["kind"] == "done" and events[-1]["data"] == {"state": "stopped"}
    # The trainer is free again.
    await until_idle(api.manager)
    again = await api.client.post("/runs", json={**body, "tasks": ["v2.playground-9"]})
    assert again.status_code == 201, again.text
    assert "kept although the site did not answer" in again.json()["task_set_note"]


async def test_a_run_whose_served_model_is_not_the_learners_fails_with_both_named(api: Api, vllm_admin):
    vllm_admin.root = "/models/Qwen3-VL-8B-Instruct"
    response = await api.client.post("/runs", json={"domain": "playground", "episodes": 4})
    assert response.status_code == 201
    failed = await wait_for_state(api.manager, response.json()["run_id"], {RunState.FAILED})
    assert failed.error.startswith("ModelMismatch: the trainer would train tiny-model-as-served")
    assert "/models/Qwen3-VL-8B-Instruct" in failed.error
    await until_idle(api.manager)


async def test_a_restarted_trainer_resumes_interrupted_runs_and_settles_the_others(api: Api, vllm_admin):
    registry, runs_dir = api.manager.registry, api.settings.runs_dir

    async def interrupted(run_id: str, created_at: float, state: RunState = RunState.RUNNING) -> Path:
        run_dir = runs_dir / run_id
        run_dir.mkdir(parents=True)
        spec = RunSpec(domain="playground", episodes=1000, eval_every=0)
        status = RunStatus(
            run_id=run_id, state=state, spec=spec, created_at=created_at, updated_at=created_at, run_dir=str(run_dir)
        )
        await registry.save(status)
        return run_dir

    # Newest first is the order resume_interrupted goes through; the one it resumes is the oldest.
    good = await interrupted("r-good", 1.0)
    cfg = resolve(
        RunSpec(domain="playground", episodes=1000, eval_every=0),
        "r-good",
        ["local.playground-1"],
        load_defaults(api.settings.rl_config),
        profile_for(api.settings.target),
    )
    (good / "config.json").write_text(json.dumps({"run": cfg.model_dump(mode="json")}))
    await interrupted("r-stop-asked", 2.0)
    await api.redis.sadd(keys.STOPPED_RUNS, "r-stop-asked")
    vllm_admin.adapters |= {"r-stop-asked-v3", "r-stop-asked-v4"}  # what its last trainer had loaded
    await interrupted("r-no-config", 3.0)
    (await interrupted("r-old-config", 4.0, RunState.STOPPING)).joinpath("config.json").write_text('{"run": {}}')
    await interrupted("r-finished", 5.0, RunState.FINISHED)

    await api.manager.resume_interrupted()
    states = {s.run_id: (s.state, s.error) for s in await registry.all()}
    assert states["r-stop-asked"] == (RunState.STOPPED, None)
    assert not {a for a in vllm_admin.adapters if a.startswith("r-stop-asked")}
    assert states["r-no-config"] == (RunState.FAILED, "interrupted before its config was written")
    assert states["r-old-config"][0] is RunState.FAILED
    assert states["r-old-config"][1].startswith("cannot resume: config.json is not valid")
    assert states["r-finished"] == (RunState.FINISHED, None)
    assert api.manager.busy() == "r-good"
    running = await wait_for_state(api.manager, "r-good", {RunState.RUNNING})
    # A trainer that shuts down leaves its run `running`, for the next start to resume.
    await api.manager.shutdown()
    assert (await registry.get("r-good")).state is RunState.RUNNING == running.state


async def test_a_trainer_leaves_another_checkouts_runs_alone(api: Api, tmp_path):
    """Two checkouts' trainers on one Redis: an interrupted run of the other one (its folder in the
    other data folder, a valid config there) is not resumed nor touched, and a record written by a
    newer trainer (a field this schema does not know) does not stop this one's start."""
    other_dir = tmp_path / "other-checkout" / "var" / "runs" / "theirs-1"
    other_dir.mkdir(parents=True)
    spec = RunSpec(domain="playground", episodes=1000, eval_every=0)
    cfg = resolve(
        spec,
        "theirs-1",
        ["local.playground-1"],
        load_defaults(api.settings.rl_config),
        profile_for(api.settings.target),
    )
    (other_dir / "config.json").write_text(json.dumps({"run": cfg.model_dump(mode="json")}))
    theirs = RunStatus(
        run_id="theirs-1", state=RunState.RUNNING, spec=spec, created_at=1.0, updated_at=1.0, run_dir=str(other_dir)
    )
    await api.manager.registry.save(theirs)
    newer = json.loads(theirs.model_copy(update={"run_id": "theirs-newer"}).model_dump_json()) | {"a_newer_field": 1}
    await api.redis.hset(keys.RUNS, "theirs-newer", json.dumps(newer))

    await api.manager.resume_interrupted()
    assert api.manager.busy() is None
    assert [s.run_id for s in await api.manager.registry.all()] == ["theirs-1"]
    left = await api.manager.registry.get("theirs-1")
    assert (left.state, left.error, left.updated_at) == (RunState.RUNNING, None, theirs.updated_at)
    listed = await api.client.get("/runs")
    assert listed.status_code == 200 and [r["run_id"] for r in listed.json()] == ["theirs-1"]


async def _played(job):
    return episode(job)


async def test_a_run_that_ends_unloads_its_adapters_whatever_its_end(api: Api, vllm_admin):
    """Finished, stopped, failed: after each, vLLM lists what it listed before the run (a promoted
    mode's adapter and another run's stay); leftovers would take later runs' ``max_loras`` slots."""
    vllm_admin.adapters |= {"qwen3vl_grpo-0123abcd", "someone-else-20260101-000000-0000-v3"}
    before = set(vllm_admin.adapters)
    api.manager.settings = api.manager.settings.model_copy(update={"outage_wait_s": 1.0})
    body = {"domain": "playground", "tasks": ["local.playground-1"], "eval_every": 0}

    async def fails_after_the_first_version(job):
        return infra(job, "env: the browser died") if job.policy.version >= 1 else episode(job)

    worker_stop = asyncio.Event()
    play = {"script": _played}

    async def scripted(job):
        return await play["script"](job)

    worker = asyncio.create_task(scripted_worker(api.redis, api.settings, scripted, worker_stop, []))
    try:
        finished = await api.client.post("/runs", json={**body, "episodes": 8, "name": "ends-finished"})
        run_id = finished.json()["run_id"]
        final = await wait_for_state(api.manager, run_id, {RunState.FINISHED})
        assert final.policy_version == 2
        assert {a for a in vllm_admin.loads if a.startswith(run_id)} == {f"{run_id}-v1", f"{run_id}-v2"}
        assert vllm_admin.adapters == before, "finished"
        await until_idle(api.manager)

        stopped = await api.client.post("/runs", json={**body, "episodes": 1000, "name": "ends-stopped"})
        run_id = stopped.json()["run_id"]
        await wait_for_state(api.manager, run_id, {RunState.RUNNING}, updates=2)
        assert f"{run_id}-v2" in vllm_admin.adapters
        assert (await api.client.post(f"/runs/{run_id}/stop", json={})).status_code == 200
        await wait_for_state(api.manager, run_id, {RunState.STOPPED})
        assert vllm_admin.adapters == before, "stopped"
        await until_idle(api.manager)

        play["script"] = fails_after_the_first_version
        failing = await api.client.post("/runs", json={**body, "episodes": 1000, "name": "ends-failed"})
        run_id = failing.json()["run_id"]
        failed = await wait_for_state(api.manager, run_id, {RunState.FAILED})
        assert failed.policy_version >= 1 and "browser died" in failed.error
        assert f"{run_id}-v1" in vllm_admin.loads
        assert vllm_admin.adapters == before, "failed"
    finally:
        worker_stop.set()
        await worker


async def test_a_run_the_policy_server_cannot_serve_is_refused_at_submit_naming_both_settings(api: Api, vllm_admin):
    """The policy service's advertised capabilities (halo.schemas.policy_server) decide before the run exists."""
    key = capabilities_key("halo-base", vllm_admin.port)
    caps = dict(served_model_name="halo-base", port=vllm_admin.port, max_lora_rank=8, max_loras=4, published_at=1.0)
    await api.redis.set(key, PolicyCapabilities(tower_lora=False, weight_reload=False, **caps).model_dump_json())
    cases = [
        ({"lora_target": "language+tower"}, "lora_target 'language+tower'", "HALO_POLICY_TOWER_LORA=true"),
        ({"lora_target": "language+merger"}, "lora_target 'language+merger'", "HALO_POLICY_TOWER_LORA=true"),
        ({"full_weights": ["vision_merger"]}, "full_weights ['vision_merger']", "HALO_POLICY_WEIGHT_RELOAD=true"),
    ]
    for extra, setting, remedy in cases:
        response = await api.client.post("/runs", json={"domain": "playground", "episodes": 4, **extra})
        assert response.status_code == 422, (extra, response.text)
        assert setting in response.json()["error"] and remedy in response.json()["error"], response.text
    # The adapter rank comes from the trainer's run defaults (the tiny profile's 8), not the request:
    # a conflict between the stack's two sides.
    await api.redis.set(
        key, PolicyCapabilities(tower_lora=True, weight_reload=True, **caps | {"max_lora_rank": 4}).model_dump_json()
    )
    response = await api.client.post("/runs", json={"domain": "playground", "episodes": 4})
    assert response.status_code == 409, response.text
    assert "lora_r 8 is above the policy server's max_lora_rank 4" in response.json()["error"]
    assert "HALO_POLICY_MAX_LORA_RANK=8" in response.json()["error"]
    assert await api.manager.registry.all() == [] and not api.settings.runs_dir.exists()
    # Several replicas cannot take one server's weight reload: a conflict with the stack, not a bad field.
    record = PolicyCapabilities(tower_lora=True, weight_reload=True, replicas=2, **caps)
    await api.redis.set(key, record.model_dump_json())
    response = await api.client.post("/runs", json={"domain": "playground", "full_weights": ["vision_merger"]})
    assert response.status_code == 409 and "2 policy replicas" in response.json()["error"], response.text
    # A server that can: accepted (the run-start tower probe still runs; stopped at once here).
    await api.redis.set(key, PolicyCapabilities(tower_lora=True, weight_reload=True, **caps).model_dump_json())
    response = await api.client.post("/runs", json={"domain": "playground", "lora_target": "language+tower"})
    assert response.status_code == 201, response.text
    await api.manager.stop(response.json()["run_id"])
