"""A short real training run through Redis, Chromium, vLLM on the CPU, reward service and trainer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import redis

from tests import lifetime
from tests.e2e.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.vllm, pytest.mark.browser]

SHORT_RUN = {
    "domain": "playground",
    "tasks": ["local.playground-1"],
    "num_generations": 4,
    "max_steps": 2,
    "eval_every": 2,
    "eval_episodes": 2,
}


def _served(stack) -> set[str]:
    return {m["id"] for m in httpx.get(f"{stack.url['policy']}/v1/models").json()["data"]}


def test_short_run_advances_the_adapter_in_vllm_and_writes_metrics(stack):
    with stack.api() as api:
        created = api.post("/runs", json={**SHORT_RUN, "episodes": 8, "name": "e2e"})
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
        # one run per trainer: a second one is refused while the first trains
        busy = api.post("/runs", json={**SHORT_RUN, "episodes": 4})
        assert busy.status_code == 409 and "training" in busy.json()["error"]
    status = stack.wait_run(run_id, {"finished"})
    assert status["episodes_done"] == 8 and status["updates"] == 2 and status["policy_version"] == 2
    # The run served v1 and v2 while it trained; once finished, vLLM lists none of its adapters.
    assert not {m for m in _served(stack) if m.startswith(f"{run_id}-v")}, _served(stack)
    assert f"adapter {run_id}-v2 loaded into vLLM" in (stack.data_dir / "stack" / "logs" / "trainer.log").read_text()
    run_dir = Path(status["run_dir"])
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["update"] for m in lines] == [1, 2]
    for key in (
        "rollout/mean_reward",
        "rollout/reward_std",
        "rollout/frac_reward_zero_std",
        "rollout/action_validity",
        "rollout/episode_length",
        "rollout/success_rate",
        "train/grad_norm",
        "train/entropy",
        "policy/version",
        "rollout/staleness",
        "rollout/episodes_per_s",
    ):
        assert key in lines[-1], key
    assert lines[-1]["rollout/action_validity"] == 1.0  # structured outputs on the tiny model
    evals = [json.loads(x) for x in (run_dir / "eval.jsonl").read_text().splitlines()]
    assert [e["update"] for e in evals] == [0, 2] and all(e["eval/episodes"] == 2 for e in evals)
    assert (run_dir / "adapters" / "v2" / "adapter_model.safetensors").exists()
    assert (run_dir / "checkpoints" / "latest").exists() and (run_dir / "curve.png").exists()
    with stack.api() as api:
        assert len(api.get(f"/runs/{run_id}/metrics").json()) == 2
        events = api.get(f"/runs/{run_id}/events", timeout=30).text
        assert "event: done" in events and '"finished"' in events
        assert "halo_trainer_metric" in api.get("/metrics").text


def test_trainer_killed_mid_run_resumes_without_losing_or_double_counting(stack):
    with stack.api() as api:
        run_id = api.post("/runs", json={**SHORT_RUN, "episodes": 16, "name": "resume"}).json()["run_id"]
    stack.wait_run(run_id, {"running"}, at_least_updates=1)
    stack.kill_and_restart_trainer()
    status = stack.wait_run(run_id, {"finished"})
    # 16 episodes in jobs of one episode, 4 jobs per update: exactly 4 updates' worth, counted once
    assert status["episodes_done"] == 16 and status["updates"] == 4
    client = redis.Redis.from_url(stack.redis_url)
    used = list(client.scan_iter(f"halo:run:{run_id}:results:done:*"))  # the results queue's done-marks
    assert len(used) == 16
    pending = client.xpending(f"halo:run:{run_id}:results", "learner")
    assert pending["pending"] == 0
    log = (stack.data_dir / "stack" / "logs" / "trainer.log").read_text()
    assert f"resuming interrupted run {run_id}" in log and f"resumed run {run_id}" in log


def test_bad_run_requests_are_clear_4xx(stack):
    with stack.api() as api:
        cases = [
            ({"domain": "playground", "episodes": 0}, 422, "episodes"),
            ({"domain": "Not A Domain!"}, 422, "domain"),
            ({"domain": "nosuchsite"}, 422, "no tasks"),
            ({"domain": "playground", "tasks": ["local.playground-999"]}, 422, "unknown tasks"),
            ({"domain": "playground", "loss_type": "ppo"}, 422, "loss_type"),
            ({"domain": "playground", "surprise": 1}, 422, "surprise"),
            ({"domain": "playground", "algorithm": "mcts", "critic": "openai"}, 422, "needs an API key"),
            # The stack's vLLM runs without tower LoRA (its advertised capabilities): refused before the run exists.
            ({"domain": "playground", "lora_target": "language+tower"}, 422, "HALO_POLICY_TOWER_LORA=true"),
        ]
        for body, code, words in cases:
            r = api.post("/runs", json=body)
            assert r.status_code == code, (body, r.text)
            assert words in r.json()["error"], (body, r.json())
        assert api.post("/runs", content=b"{not json", headers={"content-type": "application/json"}).status_code == 422
        assert api.get("/runs/nope").status_code == 404
        assert api.post("/runs/nope/stop", json={}).status_code == 404
    # The local stack has a token by default: a request without it changes nothing.
    anonymous = httpx.post(f"{stack.url['trainer']}/runs/nope/stop", json={}, timeout=30)
    assert anonymous.status_code == 401 and "bearer token" in anonymous.json()["error"]


def test_halo_train_passes_every_option_to_the_run(stack):
    """`halo train` (what `make train` runs) forwards its flags into the run's resolved config."""
    out = stack.halo(
        "train", "--domain", "playground", "--task", "local.playground-2", "--episodes", "3", "--num-generations", "3",
        "--max-steps", "1", "--temperature", "0.9", "--branch", "best", "--eval-every", "0", "--eval-episodes", "5",
        "--lr", "0.003", "--name", "cli", "--detach", "--no-stack",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    run_id = out.stdout.split("run ", 1)[1].split()[0]
    status = stack.wait_run(run_id, {"finished"})
    config = json.loads((Path(status["run_dir"]) / "config.json").read_text())["run"]
    assert config["tasks"] == ["local.playground-2"] and config["episodes"] == 3
    assert (config["num_generations"], config["max_steps"], config["temperature"]) == (3, 1, 0.9)
    assert (config["branch"], config["eval_every"], config["eval_episodes"]) == ("best", 0, 5)
    assert config["learning_rate"] == 0.003
    assert not (Path(status["run_dir"]) / "eval.jsonl").exists()  # eval_every 0: never evaluated


def test_halo_train_into_a_file_logs_plain_progress_lines(stack, tmp_path):
    """`make train ... | tee log`: with stdout a file, `halo train` prints a plain line per phase of
    a real run (and at least every 15 s), with no control characters of a live display."""
    log = tmp_path / "train.log"
    with log.open("w") as out:
        done = lifetime.run(
            [sys.executable, "-m", "halo.cli.main", "train", "--domain", "playground", "--task", "local.playground-1",
             "--episodes", "4", "--num-generations", "2", "--max-steps", "1", "--eval-every", "1", "--eval-episodes",
             "1", "--name", "log", "--no-stack"],
            env=stack.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=900,
        )  # fmt: skip
    text = log.read_text()
    assert done.returncode == 0, text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), repr(text[-2000:])
    lines = [line for line in text.splitlines() if " episodes, update " in line]
    phases = [line.split(" | ", 1)[1] for line in lines]
    assert any(p.startswith("evaluating v0: ") for p in phases), phases
    assert any(p.startswith("collecting update 1: ") for p in phases), phases
    last = r"\d\d:\d\d:\d\d 4/4 episodes, update 1 \(v1\), reward \S+ success \S+, ETA \S+( \S+)? \| finished"
    assert re.fullmatch(last, lines[-1]), lines
