"""The end of `halo train`: a short summary from the final status and the run's evaluations, or the
status as JSON with --json (for scripts). The trainer is a stand-in answering the run API."""

from __future__ import annotations

import json

import httpx
import pytest
from typer.testing import CliRunner

from halo.cli import main as cli
from halo.cli import train_commands
from halo.cli.summary import run_summary, viewer_link
from halo.schemas import RunSpec, RunState, RunStatus

RUN = "playground-20260101-120000-ab12"
VIEWER = f"http://127.0.0.1:8400/ui/#/run/{RUN}"
EVALS = [
    {"update": 0, "eval/success_rate": 0.125, "eval/ci_low": 0.035, "eval/ci_high": 0.36, "eval/episodes": 16.0,
     "eval/policy_version": 0.0},
    {"update": 4, "eval/success_rate": 0.25, "eval/ci_low": 0.102, "eval/ci_high": 0.495, "eval/episodes": 16.0,
     "eval/policy_version": 4.0},
    {"update": 8, "eval/success_rate": 0.4375, "eval/ci_low": 0.231, "eval/ci_high": 0.668, "eval/episodes": 16.0,
     "eval/policy_version": 8.0},
]  # fmt: skip


def status(state: RunState = RunState.FINISHED, **fields) -> RunStatus:
    values = {
        "run_id": RUN,
        "state": state,
        "spec": RunSpec(domain="playground"),
        "created_at": 1000.0,
        "updated_at": 1302.0,
        "episodes_done": 64,
        "episodes_total": 64,
        "updates": 8,
        "policy_version": 8,
        "adapter_name": f"{RUN}-v8",
        "latest_metrics": {"train/loss": 0.5, "eval/success_rate": 0.4375},
        "run_dir": f"var/runs/{RUN}",
    }
    return RunStatus(**(values | fields))


def test_the_summary_reads_before_and_after_with_intervals_and_says_where_things_are() -> None:
    text = run_summary(status(), EVALS, VIEWER)
    assert text.splitlines() == [
        f"run {RUN} finished",
        "  held-out success  0.12 [0.04, 0.36] (2/16, v0)  ->  0.44 [0.23, 0.67] (7/16, v8)   (95% Wilson intervals)",
        "  updates           8",
        "  episodes          64 in 5m 02s wall time (0.21/s)",
        f"  run folder        var/runs/{RUN}",
        f"  adapter           v8 (latest): adapters/v8 in the run folder; served as {RUN}-v8 until the run ended "
        "(`halo modes promote` serves it again)",
        f"  viewer            {VIEWER}",
    ]


def test_the_summary_names_the_tasks_whose_held_out_success_moved() -> None:
    def line(version: int, first: int, second: int) -> dict:
        tasks = {
            "local.playground-1": {"episodes": 3, "successes": first},
            "local.playground-2": {"episodes": 3, "successes": second},
        }
        rate = (first + second) / 6
        return {
            "update": version,
            "eval/success_rate": rate,
            "eval/episodes": 6.0,
            "eval/policy_version": float(version),
            "tasks": tasks,
        }

    evals = [line(0, 0, 0), line(10, 3, 0), line(20, 3, 1), line(40, 0, 0)]
    rows = run_summary(status(), evals, VIEWER).splitlines()
    assert rows[1].startswith("  held-out success  0.00 (0/6, v0)  ->  0.00 (0/6, v40)")
    assert rows[2] == "  tasks that moved  local.playground-1  0/3 (v0) -> best 3/3 (v10) -> 0/3 (v40)"
    assert rows[3] == "                    local.playground-2  0/3 (v0) -> best 1/3 (v20) -> 0/3 (v40)"
    assert rows[4].startswith("  updates")
    rising = run_summary(status(), [line(0, 0, 0), line(10, 1, 0), line(20, 3, 0)], VIEWER).splitlines()
    assert rising[2] == "  tasks that moved  local.playground-1  0/3 (v0) -> 3/3 (v20)"  # the best is the last
    flat = run_summary(status(), [line(0, 1, 0), line(10, 1, 0)], VIEWER).splitlines()
    assert flat[2] == "  tasks that moved  none: no task's held-out successes rose above its first evaluation's"
    assert "tasks that moved" not in run_summary(status(), EVALS, VIEWER)  # lines without per-task counts
    odd = line(10, 3, 0)
    odd["tasks"] = {"local.playground-1": {"episodes": "3", "successes": True}, "local.playground-2": None}
    assert "none: no task's" in run_summary(status(), [line(0, 0, 0), odd], VIEWER)  # unusable counts: no claim


def test_the_summary_without_evaluations_or_updates_says_so() -> None:
    none = run_summary(status(RunState.STOPPED, policy_version=0, updates=0, adapter_name=None), [], VIEWER)
    assert "not measured (no evaluation ran" in none and "none yet: no update was published" in none
    assert none.startswith(f"run {RUN} stopped")
    # Nulls (the viewer's NaN), booleans and strings are not measurements; one evaluation is said to be one.
    odd = [{"eval/success_rate": None}, {"eval/success_rate": True}, {"eval/success_rate": "0.5"}, EVALS[0]]
    assert "0.12 [0.04, 0.36] (2/16, v0), the only evaluation" in run_summary(status(), odd, VIEWER)
    instant = run_summary(status(updated_at=1000.0), EVALS, VIEWER)
    assert "64 in 0s wall time (n/a)" in instant


def test_viewer_link() -> None:
    assert viewer_link("http://127.0.0.1:8400/", RUN) == VIEWER


class Trainer:
    """Answers POST /runs, GET /runs/{id} (running once, then finished) and the viewer's metrics."""

    def __init__(self, final: RunStatus) -> None:
        self.final = final
        self.polls = 0
        self.submitted: dict | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "POST" and path == "/runs":
            self.submitted = json.loads(request.content)
            return httpx.Response(201, text=status(RunState.PENDING, updates=0, policy_version=0).model_dump_json())
        if path == f"/runs/{RUN}":
            self.polls += 1
            running = status(RunState.RUNNING, updates=3, policy_version=3)
            return httpx.Response(200, text=(running if self.polls == 1 else self.final).model_dump_json())
        if path == f"/ui/api/runs/{RUN}/metrics":
            return httpx.Response(200, json={"metrics": [], "eval": EVALS})
        return httpx.Response(404, json={"error": f"no route {path}"})


@pytest.fixture
def trainer(monkeypatch: pytest.MonkeyPatch) -> Trainer:
    fake = Trainer(status())
    monkeypatch.setattr(
        train_commands,
        "_client",
        lambda settings: httpx.Client(base_url="http://127.0.0.1:8400", transport=httpx.MockTransport(fake)),
    )
    monkeypatch.setattr(train_commands.stack_probes, "is_ready", lambda url: True)
    monkeypatch.setattr(train_commands.time, "sleep", lambda s: None)
    return fake


def test_train_ends_with_the_summary(trainer: Trainer) -> None:
    result = CliRunner().invoke(cli.app, ["train", "--domain", "playground"])
    assert result.exit_code == 0, result.output
    assert f"run {RUN} finished\n  held-out success  0.12 [0.04, 0.36] (2/16, v0)  ->  0.44" in result.stdout
    assert f"viewer            {VIEWER}" in result.stdout
    assert "train/loss" not in result.stdout  # no metrics dump


def test_train_json_prints_the_final_status_alone_on_stdout(trainer: Trainer) -> None:
    result = CliRunner().invoke(cli.app, ["train", "--domain", "playground", "--json"])
    assert result.exit_code == 0, result.output
    final = json.loads(result.stdout)  # nothing else on stdout
    assert RunStatus.model_validate(final) == trainer.final
    assert f"run {RUN} submitted" in result.stderr


def test_train_json_of_a_failed_run_still_prints_it_and_exits_1(trainer: Trainer) -> None:
    trainer.final = status(RunState.FAILED, error="vLLM went away")
    result = CliRunner().invoke(cli.app, ["train", "--domain", "playground", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["state"] == "failed"
    assert "run ended failed: vLLM went away" in result.stderr


def test_train_sends_only_the_settings_given(trainer: Trainer) -> None:
    """The trainer fills in the rest: a knob this CLI knows and an older trainer does not is never
    sent unless asked for (a stack started before the knob was added answered 422)."""
    result = CliRunner().invoke(cli.app, ["train", "--domain", "playground", "--seed", "3", "--common-random-numbers"])
    assert result.exit_code == 0, result.output
    given = {"domain": "playground", "seed": 3, "common_random_numbers": True}
    assert trainer.submitted == {**given, "algorithm": "grpo", "name": ""}  # the command's own two
