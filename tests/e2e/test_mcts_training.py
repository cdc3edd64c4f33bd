"""A short MCTS + DPO run through Redis, Chromium, vLLM on the CPU, the reward service and the trainer."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import redis

from halo_trainer.mcts.tree import load_tree

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.vllm, pytest.mark.browser]


# `halo train` for two iterations of one 4-simulation search each on the fixed-target task, set so
# that each search gives preference pairs for its DPO step (add --name).
# widening 0: all K children at a node's first expansion, so a 4-simulation search on a one-click
# task has pairs for the DPO step; widening runs on the clone in test_mcts_search_clone.
# dense return: on a one-click task every child is terminal, and a terminal node's value is its
# outcome, 0 for every miss; its backed-up return with the click's near-target reward
# is what tells a close miss from a far one, and so gives the pairs.
PAIRED_SEARCHES = (
    "train", "--algorithm", "mcts", "--domain", "playground", "--task", "local.playground-1",
    "--episodes", "2", "--jobs-per-update", "1", "--simulations", "4", "--max-children", "3",
    "--max-depth", "2", "--theta", "0.01", "--ucb-c", "1.414", "--eval-every", "0",
    "--widening", "0", "--dense-return", "--detach", "--no-stack",
)  # fmt: skip


def test_halo_train_mcts_runs_two_iterations_and_advances_the_adapter_in_vllm(stack):
    """`halo train --algorithm mcts`: two iterations of one search each on the fixed-target task,
    each tree's pairs a DPO step, each step a new adapter version that vLLM then serves."""
    out = stack.halo(*PAIRED_SEARCHES, "--name", "mcts")
    assert out.returncode == 0, out.stdout + out.stderr
    run_id = out.stdout.split("run ", 1)[1].split()[0]
    status = stack.wait_run(run_id, {"finished"})
    run_dir = Path(status["run_dir"])
    config = json.loads((run_dir / "config.json").read_text())["run"]
    assert (
        config["algorithm"] == "mcts" and config["mcts"]["simulations"] == 4 and config["mcts"]["critic"] == "progress"
    )
    assert status["episodes_done"] == 2 and status["updates"] == 2

    trees = sorted((run_dir / "trees").glob("*.json"))
    assert [t.stem for t in trees] == [f"{run_id}-j0", f"{run_id}-j1"]
    for path in trees:
        tree = load_tree(path)
        assert tree.record.simulations == 4 and tree.record.env_steps > 0 and len(tree.record.nodes) > 1
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["update"] for m in lines] == [1, 2]
    for key in ("mcts/env_steps", "mcts/nodes", "mcts/depth", "mcts/success_found", "mcts/best_path_length"):
        assert key in lines[-1], key
    pairs = [m["dpo/pairs"] for m in lines]
    steps = sum(1 for p in pairs if p > 0)
    for m in lines:
        if m["dpo/pairs"] > 0:
            for key in ("dpo/loss", "dpo/reward_accuracy", "dpo/reward_margin", "dpo/kl"):
                assert key in m, key
    # A version per iteration that had pairs; the newest is what vLLM serves.
    assert steps >= 1, f"no preference pair in either search: {pairs}"
    assert status["policy_version"] == steps
    served = {m["id"] for m in httpx.get(f"{stack.url['policy']}/v1/models").json()["data"]}
    assert not {m for m in served if m.startswith(f"{run_id}-v")}, served  # the finished run's adapters left vLLM
    assert (run_dir / "adapters" / f"v{steps}" / "adapter_model.safetensors").exists()
    assert (run_dir / "checkpoints" / "latest").exists()


def test_trainer_killed_mid_mcts_run_resumes_without_losing_or_reusing_a_search(stack):
    """``kill -9`` of the trainer after an iteration and its checkpoint: the restarted trainer resumes
    the same run, its versions continue from the checkpoint's, and every search result is used once."""
    out = stack.halo(
        "train", "--algorithm", "mcts", "--domain", "playground", "--task", "local.playground-1",
        "--episodes", "4", "--jobs-per-update", "1", "--simulations", "2", "--max-children", "3",
        "--max-depth", "2", "--theta", "0.01", "--eval-every", "0", "--name", "mctsresume",
        "--widening", "0", "--dense-return", "--detach", "--no-stack",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    run_id = out.stdout.split("run ", 1)[1].split()[0]
    before = stack.wait_run(run_id, {"running"}, at_least_updates=1)  # the tiny profile checkpoints every update
    stack.kill_and_restart_trainer()
    status = stack.wait_run(run_id, {"finished"})

    # 4 searches of one job each, one per iteration: exactly 4 iterations, each search counted once
    assert status["episodes_done"] == 4 and status["updates"] == 4
    client = redis.Redis.from_url(stack.redis_url)
    assert len(list(client.scan_iter(f"halo:run:{run_id}:results:done:*"))) == 4
    assert client.xpending(f"halo:run:{run_id}:results", "learner")["pending"] == 0
    run_dir = Path(status["run_dir"])
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    last = {m["update"]: m for m in lines}  # an iteration the kill cut off before its checkpoint is redone
    assert sorted(last) == [1, 2, 3, 4] and sum(m["mcts/searches"] for m in last.values()) == 4
    # versions continue from the checkpoint: one per iteration with pairs, none skipped or repeated
    steps = sum(1 for m in last.values() if m["dpo/pairs"] > 0)
    assert status["policy_version"] == steps >= before["policy_version"]
    versions = sorted(int(p.name[1:]) for p in (run_dir / "adapters").glob("v*"))
    assert versions[-1] == steps and set(range(1, steps + 1)) <= set(versions)
    served = {m["id"] for m in httpx.get(f"{stack.url['policy']}/v1/models").json()["data"]}
    assert not {m for m in served if m.startswith(f"{run_id}-v")}, served  # the finished run's adapters left vLLM
    assert {t.stem for t in (run_dir / "trees").glob("*.json")} >= {f"{run_id}-j{i}" for i in range(4)}
    log = (stack.data_dir / "stack" / "logs" / "trainer.log").read_text()
    assert f"resuming interrupted run {run_id}" in log and f"resumed run {run_id}" in log
