"""`halo eval` through the real embedded stack: two modes on the same Playground tasks, resume, and the
gpt modes against a real OpenAI-compatible server (the stack's own vLLM stands in for the provider:
same protocol, same client)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from halo.modes import promote
from halo.settings.eval import EvalSettings

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.vllm, pytest.mark.browser]

TWO_TASKS = ["--domain", "playground", "--sample-size", "2", "--seed", "7", "--max-steps", "2"]


@pytest.fixture(scope="module")
def evaluating(stack, tiny_model_dir, tmp_path_factory):
    """The stack's environment with a qwen3vl_grpo adapter promoted (random weights: a stand-in)."""
    from halo_model.lora import random_adapter

    checkpoints = tmp_path_factory.mktemp("checkpoints")
    adapter = random_adapter(tiny_model_dir, tmp_path_factory.mktemp("adapter") / "v1", seed=5)
    env = {**stack.env, "HALO_EVAL_CHECKPOINTS_DIR": str(checkpoints), "HALO_EVAL_OPENAI_API_KEY": ""}
    env.pop("OPENAI_API_KEY", None)
    promote("qwen3vl_grpo", adapter, EvalSettings(_env_file=None, checkpoints_dir=checkpoints), run_id="stand-in")
    evaluating = copy.copy(stack)  # the package's stack, with an environment of this module's own
    evaluating.env = env
    return evaluating


def _results(stack, name: str) -> tuple[Path, dict]:
    folder = Path(stack.data_dir) / "eval" / name
    return folder, json.loads((folder / "results.json").read_text())


def test_two_modes_play_the_same_tasks_and_an_interrupted_evaluation_resumes(evaluating):
    s = evaluating
    done = s.halo("eval", "--modes", "qwen3vl_base", "qwen3vl_grpo", *TWO_TASKS, "--name", "pair")
    assert done.returncode == 0, done.stderr[-3000:]
    folder, results = _results(s, "pair")
    plan = results["plan"]
    assert len(plan["tasks"]) == 2 and all(t.startswith("local.playground-") for t in plan["tasks"])
    assert plan["served"]["qwen3vl_grpo"].startswith("qwen3vl_grpo-")
    lines = [json.loads(x) for x in (folder / "episodes.jsonl").read_text().splitlines()]
    pairs = {m: sorted((r["task"], r["seed"]) for r in lines if r["mode"] == m) for m in plan["modes"]}
    assert pairs["qwen3vl_base"] == pairs["qwen3vl_grpo"] and len(pairs["qwen3vl_base"]) == 2
    for mode in plan["modes"]:
        m = results["modes"][mode]
        assert m["n"] + m["unscored_episodes"] == 2 and m["ci_low"] <= (m["rate"] or 0) <= m["ci_high"]
    assert results["paired"][0]["a"] == "qwen3vl_base" and 0 <= results["paired"][0]["p_value"] <= 1
    assert (folder / "chart.png").read_bytes()[:4] == b"\x89PNG"
    assert "| `qwen3vl_grpo` |" in (folder / "table.md").read_text()

    # An interruption: two episodes written, the third cut mid-line. The same command replays only the rest.
    raw = (folder / "episodes.jsonl").read_text().splitlines()
    (folder / "episodes.jsonl").write_text("\n".join(raw[:2]) + "\n" + raw[2][:15])
    again = s.halo("eval", "--modes", "qwen3vl_base", "qwen3vl_grpo", *TWO_TASKS, "--name", "pair")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming: 2 of 4 episodes already played" in again.stderr
    assert again.stderr.count("] qwen3vl_") == 2  # only the two missing episodes were played
    after = [json.loads(x) for x in (folder / "episodes.jsonl").read_text().splitlines() if x.endswith("}")]
    assert after[:2] == lines[:2] and len(after) == 4


def test_a_gpt_mode_plays_through_an_openai_compatible_server_and_unusable_ones_are_refused(evaluating):
    s = evaluating
    provider = {
        "HALO_EVAL_OPENAI_BASE_URL": s.url["policy"] + "/v1",
        "HALO_EVAL_OPENAI_API_KEY": "sk-stand-in",
        "HALO_EVAL_GPT4O_MODEL": "halo-base",
    }
    one = ["--tasks", "local.playground-1", "--max-steps", "2"]
    base_env = s.env

    s.env = base_env  # no key at all: refused before anything is played, with the setting to set
    refused = s.halo("eval", "--modes", "gpt4o_baseline", *one, "--name", "nokey")
    assert refused.returncode == 2 and "gpt4o_baseline needs an API key" in refused.stderr

    s.env = {**base_env, **provider, "HALO_EVAL_GPT4O_MODEL": "no-such-model"}  # the server answers 404
    refused = s.halo("eval", "--modes", "gpt4o_baseline", *one, "--name", "badmodel")
    assert refused.returncode == 2 and "refused the request" in refused.stderr

    s.env = {**base_env, **provider, "HALO_EVAL_OPENAI_TIMEOUT_S": "0.001"}  # no answer in time
    late = s.halo("eval", "--modes", "gpt4o_baseline", *one, "--name", "timeout")
    assert late.returncode == 2 and "no usable answer" in late.stderr

    # The tiny random model, unconstrained by the policy's grammar, answers text that is no action:
    # the episode is scored, its answers counted invalid (never an infrastructure failure).
    s.env = {**base_env, **provider}
    played = s.halo("eval", "--modes", "gpt4o_baseline", *one, "--name", "gpt")
    s.env = base_env
    assert played.returncode == 0, played.stderr[-3000:]
    _, results = _results(s, "gpt")
    m = results["modes"]["gpt4o_baseline"]
    assert m["n"] == 1 and m["infra_failures"] == 0
    assert m["action_validity"] is not None and m["action_validity"] < 1


def test_smoke_reports_each_piece_and_fails_when_a_needed_one_is_missing(evaluating):
    s = evaluating
    ok = s.halo("smoke")
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    assert "ok       target" in ok.stdout and "ok       local episode local.playground-" in ok.stdout
    assert "optional openai key" in ok.stdout
    # The trainer pointed at a reward service that is not there: the episode cannot be scored, the
    # line says so and the exit status is 1.
    env = s.env
    s.env = {**env, "HALO_TRAINER_REWARD_URL": "http://127.0.0.1:9"}
    broken = s.halo("smoke")
    s.env = env
    assert broken.returncode == 1
    assert "missing  local episode" in broken.stdout and "infrastructure failure" in broken.stdout


def test_a_mode_searching_at_test_time_is_scored_beside_its_plain_episodes_with_its_cost(evaluating):
    s = evaluating
    done = s.halo(
        "eval", "--modes", "qwen3vl_base", "--search", "--search-budget", "6", *TWO_TASKS, "--name", "searched"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    folder, results = _results(s, "searched")
    assert results["plan"]["modes"] == ["qwen3vl_base", "qwen3vl_base+search"]
    assert results["plan"]["search"]["env_step_budget"] == 6
    lines = [json.loads(x) for x in (folder / "episodes.jsonl").read_text().splitlines()]
    searched = [r for r in lines if r["mode"] == "qwen3vl_base+search"]
    plain = [r for r in lines if r["mode"] == "qwen3vl_base"]
    assert sorted((r["task"], r["seed"]) for r in searched) == sorted((r["task"], r["seed"]) for r in plain)
    assert all(0 < r["steps"] <= 6 for r in searched if r["scored"])  # its cost, within the budget
    assert len(list((folder / "search" / "trees").glob("*.json"))) == len(searched)
    assert "| `qwen3vl_base+search` |" in (folder / "table.md").read_text()
