"""Only the user's own tools can change a run: every mutation of the run API as another web page
would send it (curl's view of it: the headers a browser sets), with and without a token.

Real Redis (the module's own), the real app and run manager; the env is the in-process stand-in.
What a browser does with such a page is tested in real Chromium in test_mutation_guard_browser.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from pydantic import SecretStr

from halo.policy_client import PolicyClient
from halo.schemas import RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.api.app import create_app
from halo_trainer.api.guard import bearer
from halo_trainer.api.runs import RunManager
from tests.trainer.observe.test_viewer_routes import write_run
from tests.trainer.stand_ins import EnvStandIn

TOKEN = "guard-token"
OWN = "http://127.0.0.1:8400"  # the address the requests go to: Host 127.0.0.1:8400
EVIL = "http://evil.example"
RUN = "victim-run"
# A valid body for each route: what another page would send to get through.
ROUTES = {
    f"/runs/{RUN}/stop": b"",
    "/runs": b'{"domain": "playground", "tasks": ["local.playground-1"]}',
    "/runs/grpo-run/promote": b"{}",
}


@dataclass
class Trainer:
    client: httpx.AsyncClient
    redis: aioredis.Redis
    manager: RunManager
    evals: EvalSettings
    token: str


@pytest.fixture(params=["", TOKEN], ids=["no-token", "token"])
async def trainer(request, clean_redis: str, tmp_path: Path) -> AsyncIterator[Trainer]:
    token = request.param
    settings = TrainerSettings(data_dir=tmp_path, redis_url=clean_redis, api_token=SecretStr(token))
    evals = EvalSettings(data_dir=tmp_path, checkpoints_dir=tmp_path / "checkpoints")
    write_run(settings.runs_dir, "grpo-run", "grpo", (1, 2))
    redis = aioredis.from_url(clean_redis)
    env = EnvStandIn({"local.playground-1": True})
    policy = PolicyClient("http://127.0.0.1:9", "halo-base", max_retries=0)
    manager = RunManager(settings, redis, policy, ScreenshotStore(tmp_path / "shots"), env)
    spec = RunSpec(domain="playground")
    await manager.registry.save(RunStatus(run_id=RUN, state=RunState.RUNNING, spec=spec, created_at=1, updated_at=1))
    app = create_app(settings, evals)
    app.state.manager = manager
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=OWN) as client:
        yield Trainer(client, redis, manager, evals, token)
    await policy.aclose()
    await redis.aclose()


async def nothing_changed(t: Trainer) -> None:
    assert not await t.redis.sismember(keys.STOPPED_RUNS, RUN), "the run was asked to stop"
    assert [r.run_id for r in await t.manager.registry.all()] == [RUN], "a run was created"
    assert not (t.evals.checkpoints_dir / "qwen3vl_grpo_lora").exists(), "an adapter was promoted"


def auth(t: Trainer) -> dict[str, str]:
    return {"Authorization": f"Bearer {t.token}"} if t.token else {}


async def test_requests_another_page_can_send_change_nothing(trainer: Trainer) -> None:
    """The issue's request (text/plain from another origin stopped the run) and its kin, each
    refused by name; with the token too, since a page could have learnt it."""
    sent = [
        # (headers, what the answer names)
        ({"Origin": EVIL, "Content-Type": "text/plain"}, "evil.example"),  # a CORS "simple request"
        ({"Origin": EVIL}, "evil.example"),  # fetch() of a Blob body: no content type at all
        ({"Origin": EVIL, "Content-Type": "application/x-www-form-urlencoded"}, "evil.example"),  # a <form>
        ({"Origin": EVIL, "Content-Type": "multipart/form-data; boundary=x"}, "evil.example"),
        ({"Origin": EVIL, "Content-Type": "application/json"}, "evil.example"),  # past a preflight, were there one
        ({"Origin": "null", "Content-Type": "application/json"}, "'null'"),  # a sandboxed frame, a file:// page
        ({"Origin": "http://127.0.0.1:8401", "Content-Type": "application/json"}, "127.0.0.1:8401"),  # another port
        # A DNS name rebound to 127.0.0.1: same origin as far as the browser knows, not a loopback name.
        (
            {"Origin": "http://evil.example:8400", "Host": "evil.example:8400", "Content-Type": "application/json"},
            "evil",
        ),
    ]
    for path, body in ROUTES.items():
        for headers, named in sent:
            response = await trainer.client.post(path, content=body, headers={**headers, **auth(trainer)})
            assert response.status_code == 403, (path, headers, response.text)
            assert named in response.json()["error"] and "another web page" in response.json()["error"]
    await nothing_changed(trainer)


async def test_a_tool_must_say_json_even_without_a_body(trainer: Trainer) -> None:
    """No Origin (curl, a script): a body that is not declared JSON is refused with 415, saying how."""
    for path, body in ROUTES.items():
        for content_type in (None, "text/plain", "application/x-www-form-urlencoded"):
            headers = {"Content-Type": content_type} if content_type else {}
            response = await trainer.client.post(path, content=body, headers={**headers, **auth(trainer)})
            assert response.status_code == 415, (path, content_type, response.text)
            assert "needs Content-Type: application/json" in response.json()["error"]
    await nothing_changed(trainer)


async def test_the_users_tools_and_own_page_still_change_runs(trainer: Trainer) -> None:
    json_ = {"Content-Type": "application/json"}
    for origin in ({}, {"Origin": OWN}, {"Origin": "http://localhost:8400", "Host": "localhost:8400"}):
        # Past the guard: the manager's own answer (an unknown task), not the guard's.
        body = b'{"domain": "playground", "tasks": ["local.playground-7"]}'
        response = await trainer.client.post("/runs", content=body, headers={**json_, **origin, **auth(trainer)})
        assert response.status_code == 422 and "unknown tasks" in response.json()["error"], response.text
    response = await trainer.client.post("/runs/grpo-run/promote", json={}, headers={"Origin": OWN, **auth(trainer)})
    assert response.status_code == 200, response.text
    response = await trainer.client.post(f"/runs/{RUN}/stop", json={}, headers={"Origin": OWN, **auth(trainer)})
    assert response.status_code == 200, response.text
    assert await trainer.redis.sismember(keys.STOPPED_RUNS, RUN)


@pytest.mark.parametrize("trainer", [TOKEN], indirect=True, ids=["token"])
async def test_the_token_is_a_bearer_credential_in_any_case_and_nothing_else(trainer: Trainer) -> None:
    answers = {}
    for header in (TOKEN, f"Basic {TOKEN}", "Bearer wrong", "Bearer", "", f"bearer {TOKEN}", f"BEARER  {TOKEN} "):
        response = await trainer.client.post("/runs/grpo-run/promote", json={}, headers={"Authorization": header})
        answers[header] = response.status_code
    assert answers == {
        TOKEN: 401,  # a bare token is not a bearer credential
        f"Basic {TOKEN}": 401,
        "Bearer wrong": 401,
        "Bearer": 401,
        "": 401,
        f"bearer {TOKEN}": 200,  # the scheme is case-insensitive (RFC 7235)
        f"BEARER  {TOKEN} ": 200,
    }


def test_bearer_parses_the_scheme_not_a_prefix() -> None:
    assert bearer("Bearer abc") == bearer("bearer abc") == bearer(" BeArEr   abc ") == "abc"
    assert bearer("abc") is bearer("Bearerabc") is bearer("Basic abc") is bearer(None) is bearer("Bearer ") is None
