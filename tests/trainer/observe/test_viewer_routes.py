"""The routes the viewer's controls and evaluation pages use, without a browser: promotion through the
run API (``POST /runs/{id}/promote``, the code path of ``halo modes promote``) and what it refuses,
the token on it, the read-only evaluation routes over a hand-made ``<data_dir>/eval/<id>/``, and a
step group's record keeping each fork's next screenshot (what the fork view shows)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from halo.schemas import GroupMode
from halo.schemas.promotion import PromoteResponse
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.app import create_app
from halo_trainer.learner.batching import advantages_of
from halo_trainer.observe.episode_log import EpisodeLog
from halo_trainer.rollout.play import run_job
from tests.trainer.stand_ins import job_for, services

TOKEN = "viewer-test-token"


def write_run(runs: Path, run_id: str, algorithm: str, versions: tuple[int, ...]) -> Path:
    folder = runs / run_id
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"run": {"algorithm": algorithm, "domain": "playground"}}))
    for v in versions:
        adapter = folder / "adapters" / f"v{v}"
        adapter.mkdir(parents=True)
        (adapter / "adapter_config.json").write_text(json.dumps({"r": 8, "version": v}))
        (adapter / "adapter_model.safetensors").write_bytes(bytes([v]) * 64)
    return folder


def write_eval(root: Path, eval_id: str) -> Path:
    folder = root / eval_id
    folder.mkdir(parents=True)
    plan = {"modes": ["qwen3vl_base", "qwen3vl_grpo"], "tasks": ["local.playground-1"], "seeds": [1, 2], "notes": []}
    results = {
        "eval_id": eval_id,
        "plan": plan,
        "modes": {
            "qwen3vl_base": {
                "rate": 0.5,
                "n": 2,
                "successes": 1,
                "ci_low": 0.09,
                "ci_high": 0.91,
                "mean_return": float("nan"),
                "sites": {},
            },
        },
        "paired": [],
    }
    (folder / "plan.json").write_text(json.dumps(plan))
    (folder / "results.json").write_text(json.dumps(results))
    lines = [
        {
            "mode": "qwen3vl_base",
            "task": "local.playground-1",
            "seed": 1,
            "site": "playground",
            "scored": True,
            "success": True,
        },
        {
            "mode": "qwen3vl_grpo",
            "task": "local.playground-1",
            "seed": 1,
            "site": "playground",
            "scored": True,
            "success": False,
        },
    ]
    (folder / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"mode": "cut sh')
    return folder


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, EvalSettings]]:
    settings = TrainerSettings(data_dir=tmp_path, api_token=SecretStr(TOKEN))
    evals = EvalSettings(data_dir=tmp_path, checkpoints_dir=tmp_path / "checkpoints")
    write_run(settings.runs_dir, "grpo-run", "grpo", (1, 3))
    write_run(settings.runs_dir, "mcts-run", "mcts", ())
    write_eval(evals.results_dir, "abc123")
    app = create_app(settings, evals)  # its lifespan (Redis, workers) is not needed by these routes
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer") as c:
        c.headers["Authorization"] = f"Bearer {TOKEN}"
        yield c, evals


async def test_promote_copies_the_runs_newest_or_chosen_version_to_its_algorithms_mode(client) -> None:
    c, evals = client
    response = await c.post("/runs/grpo-run/promote", json={})
    assert response.status_code == 200, response.text
    done = PromoteResponse.model_validate(response.json())
    assert (done.mode, done.version) == ("qwen3vl_grpo", 3)
    assert done.served_as == f"qwen3vl_grpo-{done.sha256[:12]}"
    record = json.loads((evals.checkpoints_dir / "qwen3vl_grpo_lora" / "promotion.json").read_text())
    assert (record["run_id"], record["version"], record["sha256"]) == ("grpo-run", 3, done.sha256)
    response = await c.post("/runs/grpo-run/promote", json={"version": 1, "mode": "qwen3vl_grpo"})
    assert response.status_code == 200 and response.json()["version"] == 1
    assert json.loads((evals.checkpoints_dir / "qwen3vl_grpo_lora" / "adapter_config.json").read_text())["version"] == 1


async def test_promote_refuses_bad_input_with_a_clear_4xx(client) -> None:
    c, evals = client
    cases = [
        ("/runs/nope/promote", {}, 404, "no run 'nope'"),
        ("/runs/.../promote", {}, 404, "no run '...'"),
        ("/runs/grpo-run/promote", {"version": 7}, 422, "has no adapter v7; it has v1..v3"),
        ("/runs/grpo-run/promote", {"mode": "qwen3vl_mcts"}, 422, "takes a mcts run's adapter"),
        ("/runs/grpo-run/promote", {"mode": "qwen3vl_base"}, 422, "takes no adapter"),
        ("/runs/grpo-run/promote", {"mode": "gpt9"}, 422, "unknown mode 'gpt9'"),
        ("/runs/grpo-run/promote", {"version": "x"}, 422, "invalid request: version"),
        ("/runs/grpo-run/promote", {"version": -1}, 422, "invalid request: version"),
        ("/runs/grpo-run/promote", {"verison": 1}, 422, "invalid request: verison"),
        ("/runs/mcts-run/promote", {}, 422, "has no adapters"),
    ]
    for path, body, status, message in cases:
        response = await c.post(path, json=body)
        assert response.status_code == status, (path, body, response.text)
        assert message in response.json()["error"], (path, body, response.text)
        assert str(evals.data_dir) not in response.text, response.text  # no path of the server's
    assert not (evals.checkpoints_dir / "qwen3vl_mcts_lora").exists()
    for headers in ({"Authorization": "Bearer wrong"}, {"Authorization": ""}):
        response = await c.post("/runs/grpo-run/promote", json={}, headers=headers)
        assert response.status_code == 401 and "bearer token" in response.json()["error"]
    assert not (evals.checkpoints_dir / "qwen3vl_grpo_lora").exists()


async def test_the_viewer_says_a_token_is_needed_and_lists_a_runs_adapters(client) -> None:
    c, _ = client
    assert (await c.get("/ui/api/info")).json() == {"live": True, "token_required": True}
    assert (await c.get("/ui/api/runs/grpo-run/adapters")).json() == {"versions": [1, 3], "mode": "qwen3vl_grpo"}
    assert (await c.get("/ui/api/runs/mcts-run/adapters")).json() == {"versions": [], "mode": "qwen3vl_mcts"}
    assert (await c.get("/ui/api/runs/nope/adapters")).status_code == 404


async def test_the_evaluation_routes_read_the_eval_folder(client) -> None:
    c, _ = client
    [listed] = (await c.get("/ui/api/evals")).json()
    assert listed["eval_id"] == "abc123" and listed["finished"] and listed["episodes"] == 2  # the cut line skipped
    one = (await c.get("/ui/api/evals/abc123")).json()
    assert one["results"]["modes"]["qwen3vl_base"]["mean_return"] is None  # NaN in the file
    cell = (await c.get("/ui/api/evals/abc123/episodes", params={"mode": "qwen3vl_grpo", "site": "playground"})).json()
    assert [(r["index"], r["success"]) for r in cell] == [(1, False)]
    assert (await c.get("/ui/api/evals/abc123/episodes/1")).json()["mode"] == "qwen3vl_grpo"
    for path in (
        "/ui/api/evals/nope",
        "/ui/api/evals/..",
        "/ui/api/evals/abc123/episodes/2",
        "/ui/api/evals/nope/episodes",
    ):
        response = await c.get(path)
        assert response.status_code == 404, path
        assert response.json().get("detail") or response.json().get("error")
    assert (await c.get("/ui/api/evals/abc123/episodes/x")).status_code == 422


async def test_a_step_groups_record_keeps_the_screenshot_each_fork_led_to(tmp_path: Path) -> None:
    result = await run_job(services(), job_for(run_id="forks", group_size=3))
    [record] = EpisodeLog(tmp_path / "episodes.jsonl", 1, advantages_of(GroupMode.STEP, "dr_grpo")).write(
        result, update=1
    )
    by_id = {t.transition_id: t for t in result.transitions}
    assert len(record["steps"]) == 2
    for k, step in enumerate(record["steps"]):
        nexts = [c["next_screenshot"] for c in step["candidates"]]
        assert nexts == [by_id[c["transition_id"]].next_screenshot_sha256 for c in step["candidates"]]
        assert None not in nexts and len(set(nexts)) == 3  # three actions, three different pages
        [kept] = [c for c in step["candidates"] if c["kept"]]
        # the kept fork's next page is the page the episode went on from
        assert kept["next_screenshot"] == record["screenshots"][k + 1]
        assert step["screenshot"] == record["screenshots"][k]
    assert [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()] == [record]


async def test_run_curves_skip_a_line_the_trainer_is_still_writing(client, tmp_path: Path) -> None:
    c, _ = client
    folder = TrainerSettings(data_dir=tmp_path).runs_dir / "grpo-run"
    lines = [{"update": 1, "train/loss": 1.5}, {"update": 2, "train/loss": float("nan")}]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"update": 3, "train/lo')
    (folder / "eval.jsonl").write_text('{"update": 0, "eval/success_rate": 0.25}\n[1]\n')
    response = await c.get("/ui/api/runs/grpo-run/metrics")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["metrics"] == [{"update": 1, "train/loss": 1.5}, {"update": 2, "train/loss": None}]
    assert body["eval"] == [{"update": 0, "eval/success_rate": 0.25}]
