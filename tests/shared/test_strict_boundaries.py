"""Values crossing a service boundary keep their JSON type.

Lax coercion let ``POST /runs {"episodes": true}`` create a one-episode run, ``POST /sessions``
take ``seed: true``, and the reward service score a site state holding NaN, Infinity or a
1e400-sized integer and a goal holding NUL characters. Each is now a 422 naming the field,
checked here on the schemas and through each service's real FastAPI app (in process, routes'
back ends replaced by stand-ins: a refused body must never reach them).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import numpy as np
import pytest
from pydantic import ValidationError

from halo.schemas import (
    Action,
    CreateSessionRequest,
    ForkRequest,
    RewardRequest,
    RunSpec,
    RunState,
    RunStatus,
    Snapshot,
    StateSummary,
)
from halo.service import ServiceError

JSON = {"content-type": "application/json"}


def _errors(exc: pytest.ExceptionInfo[ValidationError]) -> list[tuple[str, str]]:
    return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in exc.value.errors()]


def _reward_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "transition_id": "t-1",
        "run_id": "run-1",
        "episode_id": "ep-1",
        "task_id": "local.gomail-1",
        "domain": "gomail",
        "goal": "Write to Ann",
        "step": 0,
        "prev": {"url": "http://sites/gomail/", "site_state": {"state": {"progress": {}}}},
        "next": {"url": "http://sites/gomail/", "site_state": {"state": {"progress": {}}}},
        "action": {"action": "wait", "time": 1},
    }
    body.update(changes)
    return body


# -- schemas ----------------------------------------------------------------------------------------

BOOLEANS_FOR_NUMBERS = [
    (RunSpec, {"domain": "playground"}, "episodes"),
    (RunSpec, {"domain": "playground"}, "seed"),
    (RunSpec, {"domain": "playground"}, "num_generations"),
    (RunSpec, {"domain": "playground"}, "learning_rate"),
    (RunSpec, {"domain": "playground"}, "temperature"),
    (RunSpec, {"domain": "playground"}, "tis_cap"),
    (RunSpec, {"domain": "playground"}, "eval_every"),
    (RunSpec, {"domain": "playground", "algorithm": "mcts"}, "simulations"),
    (RunSpec, {"domain": "playground", "algorithm": "mcts"}, "alpha"),
    (CreateSessionRequest, {"task_id": "local.playground-1"}, "seed"),
    (CreateSessionRequest, {"task_id": "local.playground-1"}, "max_steps"),
    (ForkRequest, {}, "n"),
    (Action, {"action": "scroll"}, "pixels"),
    (Action, {"action": "wait"}, "time"),
]


@pytest.mark.parametrize(("model", "base", "field"), BOOLEANS_FOR_NUMBERS)
@pytest.mark.parametrize("value", [True, False, "1", np.bool_(True)])
def test_a_boolean_or_a_string_is_not_a_number(model, base, field, value) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate({**base, field: value})
    assert [loc for loc, _ in _errors(exc)] == [field]
    assert "should be a JSON number" in _errors(exc)[0][1]


def test_numbers_our_own_code_passes_are_still_taken() -> None:
    # numpy scalars and a whole float for an int field: what configs, samplers and tests hand over
    spec = RunSpec(domain="playground", episodes=np.int64(8), seed=3.0, learning_rate=np.float32(0.5), temperature=1)
    assert (spec.episodes, spec.seed, spec.learning_rate, spec.temperature) == (8, 3, 0.5, 1.0)
    assert type(spec.episodes) is int and type(spec.learning_rate) is float
    assert CreateSessionRequest(task_id="local.playground-1", seed=np.int32(7), max_steps=np.uint8(9)).seed == 7
    assert Action(action="scroll", pixels=np.int64(-300)).pixels == -300
    assert Action(action="wait", time=np.float64(1.5)).time == 1.5
    assert ForkRequest(n=4).n == 4
    # a request sets no knob it was not given: every unset one comes from the run defaults
    assert RunSpec(domain="playground").model_dump(exclude_none=True) == {
        "schema_version": 1,
        "domain": "playground",
        "algorithm": "grpo",
        "name": "",
    }


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_are_refused(value: float) -> None:
    for model, base, field in [
        (RunSpec, {"domain": "playground"}, "learning_rate"),
        (RunSpec, {"domain": "playground", "algorithm": "mcts"}, "theta"),  # no upper bound to catch inf
        (RunSpec, {"domain": "playground", "algorithm": "mcts"}, "rpo_alpha"),
        (Action, {"action": "wait"}, "time"),
    ]:
        with pytest.raises(ValidationError) as exc:
            model.model_validate({**base, field: value})
        assert [loc for loc, _ in _errors(exc)] == [field]


def test_unbounded_int_fields_stop_at_64_bits() -> None:
    snapshot = {"task_id": "local.playground-1", "url": "http://x/", "storage_state": {}}
    assert Snapshot(**snapshot, step=2**63 - 1).step == 2**63 - 1
    with pytest.raises(ValidationError) as exc:
        Snapshot(**snapshot, step=2**63)
    assert _errors(exc)[0][0] == "step"


def test_booleans_are_only_true_and_false() -> None:
    for field in ("terminated", "truncated", "task_success", "infra_error"):
        for value in (1, 0, "true", "yes"):
            with pytest.raises(ValidationError) as exc:
                RewardRequest.model_validate(_reward_body(**{field: value}))
            assert _errors(exc)[0][0] == field, (field, value)
    assert RewardRequest.model_validate(_reward_body(terminated=True, task_success=None)).terminated is True


def test_nul_characters_are_refused_where_text_reaches_a_browser_or_a_prompt() -> None:
    cases = [
        (RewardRequest, _reward_body(goal="Write\x00to Ann"), "goal"),
        (Action, {"action": "type", "text": "hi\x00"}, "text"),
        (Action, {"action": "answer", "text": "\x00"}, "text"),
        (Action, {"action": "key", "keys": ["ctrl", "a\x00"]}, "keys.1"),
        (Snapshot, {"task_id": "t", "url": "http://x/\x00", "step": 0, "storage_state": {}}, "url"),
    ]
    for model, body, field in cases:
        with pytest.raises(ValidationError) as exc:
            model.model_validate(body)
        assert _errors(exc)[0][0] == field and "NUL" in _errors(exc)[0][1]
    # other control characters and any other text are kept as they are
    assert Action(action="type", text="a\tb\nc \U0001f600").text == "a\tb\nc \U0001f600"


POISON = [
    ({"state": {"progress": float("nan")}}, "state.progress", "NaN"),
    ({"a": float("inf")}, "a", "Infinity"),
    ({"a": [1, {"b": float("-inf")}]}, "a.1.b", "-Infinity"),
    ({"initialfinaldiff": {"added": {"n": 10**400}}}, "initialfinaldiff.added.n", "an integer beyond 64 bits"),
    ({"n": -(2**63) - 1}, "n", "an integer beyond 64 bits"),
    ({"n": 2**63}, "n", "an integer beyond 64 bits"),
]


@pytest.mark.parametrize(("state", "where", "what"), POISON)
def test_a_site_state_holds_only_finite_numbers(state: dict, where: str, what: str) -> None:
    with pytest.raises(ValidationError) as exc:
        StateSummary(url="http://x/", site_state=state)
    (loc, msg), *_ = _errors(exc)
    assert loc == "site_state" and msg.startswith(f"{where}: {what}"), msg
    with pytest.raises(ValidationError) as exc:
        Snapshot(task_id="t", url="http://x/", step=0, storage_state=state)
    assert _errors(exc)[0][0] == "storage_state"


def test_a_site_state_of_any_other_shape_is_kept_unchanged() -> None:
    state = {
        "state": {"progress": {"compose_opened": True, "sent": 0}, "note": "NaN", "big": 2**63 - 1, "low": -(2**63)},
        "list": [1.5, -0.0, 1e308, None, False, "Infinity", [[]], {}],
    }
    assert StateSummary(url="http://x/", site_state=state).site_state == state


# -- through the services' FastAPI apps ---------------------------------------------------------------


def _problem(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    return response.json()["error"]


class TrainerStandIn:
    """The run manager: records what reached it."""

    def __init__(self) -> None:
        self.specs: list[RunSpec] = []

    async def create(self, spec: RunSpec) -> RunStatus:
        self.specs.append(spec)
        return RunStatus(run_id="run-1", state=RunState.PENDING, spec=spec, created_at=0.0, updated_at=0.0)


@pytest.fixture
async def trainer(tmp_path) -> AsyncIterator[tuple[httpx.AsyncClient, TrainerStandIn]]:
    from halo.settings.trainer import TrainerSettings
    from halo_trainer.api.app import create_app

    app = create_app(TrainerSettings(data_dir=tmp_path))
    app.state.manager = TrainerStandIn()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer") as client:
        yield client, app.state.manager


async def test_post_runs_refuses_booleans_and_non_finite_numbers(trainer) -> None:
    client, manager = trainer
    cases = [
        (b'{"domain": "playground", "episodes": true}', "episodes"),
        (b'{"domain": "playground", "seed": false}', "seed"),
        (b'{"domain": "playground", "episodes": "5"}', "episodes"),
        (b'{"domain": "playground", "learning_rate": NaN}', "learning_rate"),
        (b'{"domain": "playground", "temperature": Infinity}', "temperature"),
        (b'{"domain": "playground", "episodes": 1e400}', "episodes"),
        (b'{"domain": "playground", "eval_every": 1' + b"0" * 400 + b"}", "eval_every"),
    ]
    for raw, field in cases:
        assert _problem(await client.post("/runs", content=raw, headers=JSON)).startswith(
            f"invalid request: {field}: "
        ), raw
    assert manager.specs == []
    response = await client.post("/runs", json={"domain": "playground", "episodes": 3, "learning_rate": 1e-5})
    assert response.status_code == 201, response.text
    assert [(s.episodes, s.learning_rate) for s in manager.specs] == [(3, 1e-5)]


class EnvStandIn:
    """The session manager: records what reached it, answers 409 (no browser here)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def create(self, body: CreateSessionRequest):
        return self._record("create", body)

    async def step(self, session_id: str, action: Action):
        return self._record("step", action)

    async def fork(self, session_id: str, n: int, method):
        return self._record("fork", n)

    async def restore(self, body: Snapshot, lease_id: str | None):
        return self._record("restore", body)

    def _record(self, name: str, value: Any):
        self.calls.append((name, value))
        raise ServiceError(409, f"stand-in: {name}")


@pytest.fixture
async def env(tmp_path) -> AsyncIterator[tuple[httpx.AsyncClient, EnvStandIn]]:
    from halo.settings.env import EnvSettings
    from halo_env.app import create_app

    app = create_app(EnvSettings())  # no lifespan: no browser, no screenshot store
    app.state.manager = EnvStandIn()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://env") as client:
        yield client, app.state.manager


async def test_env_routes_refuse_booleans_nul_and_non_finite_numbers(env) -> None:
    client, manager = env
    sid = "sess-0123456789"
    cases = [
        ("/sessions", b'{"task_id": "local.playground-1", "seed": true}', "seed"),
        ("/sessions", b'{"task_id": "local.playground-1", "max_steps": true}', "max_steps"),
        ("/sessions", b'{"task_id": "local.playground-1", "seed": NaN}', "seed"),
        (f"/sessions/{sid}/fork", b'{"n": true}', "n"),
        (f"/sessions/{sid}/step", b'{"action": {"action": "scroll", "pixels": true}}', "action.pixels"),
        (f"/sessions/{sid}/step", b'{"action": {"action": "wait", "time": NaN}}', "action.time"),
        (f"/sessions/{sid}/step", b'{"action": {"action": "type", "text": "a\\u0000b"}}', "action.text"),
        (f"/sessions/{sid}/step", b'{"action": {"action": "key", "keys": ["\\u0000"]}}', "action.keys.0"),
        (
            "/sessions/restore",
            b'{"task_id": "t", "url": "http://x/", "step": 0, "storage_state": {"cookies": [{"expires": Infinity}]}}',
            "storage_state",
        ),
        ("/sessions/restore", b'{"task_id": "t", "url": "http://x/", "step": true, "storage_state": {}}', "step"),
    ]
    for path, raw, field in cases:
        assert _problem(await client.post(path, content=raw, headers=JSON)).startswith(f"invalid request: {field}: "), (
            raw
        )
    assert manager.calls == []
    # The same bodies, well typed, reach the manager unchanged.
    await client.post("/sessions", json={"task_id": "local.playground-1", "seed": 5, "max_steps": 12})
    await client.post(f"/sessions/{sid}/fork", json={"n": 2})
    await client.post(f"/sessions/{sid}/step", json={"action": {"action": "type", "text": "a\tb", "element_id": "1"}})
    cookie = {"name": "c", "value": "v", "domain": "x", "path": "/", "expires": -1}
    await client.post(
        "/sessions/restore",
        json={"task_id": "t", "url": "http://x/", "step": 1, "storage_state": {"cookies": [cookie], "origins": []}},
    )
    assert [name for name, _ in manager.calls] == ["create", "fork", "step", "restore"]
    assert (manager.calls[0][1].seed, manager.calls[0][1].max_steps, manager.calls[1][1]) == (5, 12, 2)


@pytest.fixture
async def reward(key_prefix: str, redis_url: str) -> AsyncIterator[httpx.AsyncClient]:
    from halo.settings.reward import RewardSettings
    from halo_reward.app import create_app

    app = create_app(RewardSettings(redis_url=redis_url, key_prefix=f"{key_prefix}:"))
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://r") as client:
        yield client


def _raw(body: dict[str, Any], state: str) -> bytes:
    """``body`` as JSON with ``next.site_state`` written literally (Python's json reads NaN and friends)."""
    return json.dumps(body).replace('"@STATE@"', state).encode()


async def test_post_reward_refuses_poisoned_states_nul_goals_and_booleans(reward: httpx.AsyncClient) -> None:
    body = _reward_body(next={"url": "http://sites/gomail/", "site_state": "@STATE@"})
    states = [
        ('{"state": {"progress": NaN}}', "state.progress: NaN"),
        ('{"state": {"progress": {"sent": Infinity}}}', "state.progress.sent: Infinity"),
        ('{"x": [-Infinity]}', "x.0: -Infinity"),
        ('{"x": 1e400}', "x: Infinity"),
        ('{"x": 1' + "0" * 400 + "}", "x: an integer beyond 64 bits"),
    ]
    for state, what in states:
        problem = _problem(await reward.post("/reward", content=_raw(body, state), headers=JSON))
        assert problem.startswith(f"invalid request: next.site_state: {what}"), problem
    others = [
        (_reward_body(goal="Write\u0000to Ann"), "goal"),
        (_reward_body(step=True), "step"),
        (_reward_body(terminated=1), "terminated"),
        (_reward_body(task_success="true"), "task_success"),
    ]
    for other, field in others:
        problem = _problem(await reward.post("/reward", content=json.dumps(other).encode(), headers=JSON))
        assert problem.startswith(f"invalid request: {field}: "), problem
    # Nothing of those was scored: the valid transition is paid once, not a duplicate of any.
    ok = await reward.post(
        "/reward",
        json=_reward_body(
            next={"url": "http://sites/gomail/", "site_state": {"state": {"progress": {}, "note": "NaN"}}}
        ),
    )
    assert ok.status_code == 200, ok.text
    assert ok.json()["duplicate"] is False


async def test_an_integer_too_long_for_the_json_parser_is_a_4xx(reward: httpx.AsyncClient) -> None:
    # Python's json refuses integers of more than 4,300 digits before any field is known.
    raw = _raw(
        _reward_body(next={"url": "http://sites/gomail/", "site_state": "@STATE@"}), '{"x": 1' + "0" * 5000 + "}"
    )
    response = await reward.post("/reward", content=raw, headers=JSON)
    assert 400 <= response.status_code < 500, response.text


def test_a_run_status_with_an_unmeasured_metric_reads_back() -> None:
    """A NaN metric (not measured at that update) is written as null: the stored or served status
    must read back, with NaN again, instead of failing validation."""
    import math

    from halo.schemas.runs import RunState, RunStatus

    status = RunStatus(
        run_id="r",
        state=RunState.RUNNING,
        spec=RunSpec(domain="playground"),
        created_at=0,
        updated_at=0,
        latest_metrics={"train/entropy": float("nan"), "train/loss": 0.5},
    )
    assert '"train/entropy":null' in status.model_dump_json()
    back = RunStatus.model_validate_json(status.model_dump_json()).latest_metrics
    assert math.isnan(back["train/entropy"]) and back["train/loss"] == 0.5
