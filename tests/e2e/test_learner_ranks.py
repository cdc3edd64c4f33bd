"""The trainer service as two learner ranks (``HALO_TRAINER_LEARNER_RANKS=2``: torch's elastic
launcher, gloo on the CPU) training on real rollouts: Redis, Chromium, vLLM on the CPU, the reward
service. Rank 0 is the service; rank 1 follows its learner (docs/cluster.md, "In the run loop")."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
import redis
from safetensors.torch import load_file

from halo.cli.stack_processes import pid_alive
from tests.e2e.test_mcts_training import PAIRED_SEARCHES
from tests.e2e.test_training import SHORT_RUN
from tests.trainer.test_learner_launch import ranks_of

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.vllm, pytest.mark.browser]

FOLLOWER = "halo_trainer rank 1: "


def _stop_trainer(stack, timeout_s: float = 60) -> list[int]:
    """SIGTERM the trainer's process group, as ``halo stack down`` does; the launcher's and its
    ranks' pids (each rank runs in a session of its own, the launcher passes the signal on)."""
    launcher = stack.pid("trainer")
    pids = [launcher, *ranks_of(launcher)]
    with contextlib.suppress(ProcessLookupError):  # stopped already
        os.killpg(launcher, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pids


GRPO_RUN = {**SHORT_RUN, "episodes": 8, "eval_every": 0}


@pytest.fixture(scope="module")
def reference(stack) -> tuple[list[dict], Path]:
    """The metrics of the GRPO run below on the stack's trainer as one process (asked before ``ranked``)."""
    with stack.api() as api:
        created = api.post("/runs", json={**GRPO_RUN, "name": "one-process"})
        assert created.status_code == 201, created.text
    run_dir = Path(stack.wait_run(created.json()["run_id"], {"finished"})["run_dir"])
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()], run_dir


@pytest.fixture(scope="module")
def ranked(stack):
    """The stack's trainer started again as two ranks; as one process again at the end."""
    _stop_trainer(stack)
    stack.env["HALO_TRAINER_LEARNER_RANKS"] = "2"
    up = stack.halo("stack", "up", "-s", "trainer")
    assert up.returncode == 0, up.stdout + up.stderr
    yield stack
    _stop_trainer(stack)
    stack.env.pop("HALO_TRAINER_LEARNER_RANKS")
    stack.halo("stack", "up", "-s", "trainer")


def _follower_lines(log: str) -> list[str]:
    return [line[len(FOLLOWER) :] for line in log.splitlines() if line.startswith(FOLLOWER)]


def _after_the_run(log_path: Path, start: int, timeout_s: float = 60) -> str:
    """The trainer's log from ``start`` once rank 1 dropped the run's learner (rank 0 tells it so
    just after the run's state is final)."""
    deadline = time.monotonic() + timeout_s
    while FOLLOWER + "dropped of a run's learner" not in (log := log_path.read_text()[start:]):
        assert time.monotonic() < deadline, log[-3000:]
        time.sleep(0.5)
    return log


def _figures(line: str) -> dict[str, float]:
    return {key: float(value) for key, value in re.findall(r"((?:train|dpo)/\w+)=([^,)]+)", line)}


def test_two_learner_ranks_train_on_real_rollouts_as_one_process_does(reference, ranked):
    stack = ranked
    log_path = stack.data_dir / "stack" / "logs" / "trainer.log"
    assert len(ranks_of(stack.pid("trainer"))) == 2  # the launcher's two ranks
    # The stack knows rank 0 (which answers /health) as the launcher's: its trainer, not another's.
    again = stack.halo("stack", "up", "-s", "trainer")
    assert again.returncode == 0 and "trainer  already running" in again.stdout, again.stdout + again.stderr
    assert "not started by this stack" not in again.stdout, again.stdout

    start = len(log_path.read_text())
    with stack.api() as api:
        created = api.post("/runs", json={**GRPO_RUN, "name": "ranks"})
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
    status = stack.wait_run(run_id, {"finished"})
    assert status["episodes_done"] == 8 and status["updates"] == 2 and status["policy_version"] == 2
    run_dir = Path(status["run_dir"])
    log = _after_the_run(log_path, start)
    assert f"adapter {run_id}-v2 loaded into vLLM" in log

    # Rank 1 built the run's learner, made rank 0's learner calls in rank 0's order, and dropped it.
    follower = _follower_lines(log)
    calls = [line.split(" made", 1)[0] for line in follower if " made" in line]
    assert calls == ["resume", "update", "save_adapter", "checkpoint", "update", "save_adapter", "checkpoint"], follower
    assert follower[0] == "built of a run's learner" and follower[-1] == "dropped of a run's learner", follower

    # Each update's gathered figures on rank 1 are the ones rank 0 wrote to the run's metrics.
    metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    updates = [_figures(line) for line in follower if line.startswith("update made")]
    assert [m["update"] for m in metrics] == [1, 2] and len(updates) == 2
    for mine, theirs in zip(updates, metrics, strict=True):
        assert mine["train/step"] == theirs["train/step"]
        assert mine["train/tokens"] == theirs["train/tokens"] > 0
        assert mine["train/loss"] == pytest.approx(theirs["train/loss"], rel=1e-8, abs=1e-12)
        assert mine["train/grad_norm"] == pytest.approx(theirs["train/grad_norm"], rel=1e-8)

    # Every job's result used once in a checkpointed update and acknowledged.
    client = redis.Redis.from_url(stack.redis_url)
    assert len(list(client.scan_iter(f"halo:run:{run_id}:results:done:*"))) == 8
    assert client.xpending(f"halo:run:{run_id}:results", "learner")["pending"] == 0
    assert (run_dir / "adapters" / "v2" / "adapter_model.safetensors").exists()

    # The first update's batch is the base model's rollouts, drawn with the run's seeds: the one
    # process's run drew the same, and its update is the same one.
    (first, *_), (one, *_) = metrics, reference[0]
    assert first["train/tokens"] == one["train/tokens"]
    assert first["train/loss"] == pytest.approx(one["train/loss"], rel=1e-5, abs=1e-9)
    assert first["train/grad_norm"] == pytest.approx(one["train/grad_norm"], rel=1e-5)
    mine, theirs = (load_file(d / "adapters" / "v1" / "adapter_model.safetensors") for d in (run_dir, reference[1]))
    assert mine.keys() == theirs.keys()
    a_keys, b_keys = [k for k in mine if "lora_A" in k], [k for k in mine if "lora_B" in k]
    # LoRA B starts at zero, so A gets no gradient in the first step: an equal A is the same
    # initial adapter (drawn from the run's seed on every rank).
    assert a_keys and max(float((mine[k] - theirs[k]).abs().max()) for k in a_keys) < 1e-7
    # B is the first step itself: Adam moves each entry by about the learning rate (0.01 here)
    # times g / (|g| + eps). A gradient left unsummed over the ranks would flip the sign of many
    # entries (a relative difference near 1). Float rounding of the ranks' summation order moves
    # only entries whose gradient is near eps, by a fraction of the step: measured max 2.0e-6 to
    # 2.2e-5 over four runs, relative L2 about 2.5e-6 (docs/cluster.md).
    diff = sum(float((mine[k] - theirs[k]).pow(2).sum()) for k in b_keys) ** 0.5
    step = sum(float(theirs[k].pow(2).sum()) for k in b_keys) ** 0.5
    gap = max(float((mine[k] - theirs[k]).abs().max()) for k in b_keys)
    moved = max(float(theirs[k].abs().max()) for k in b_keys)
    print(f"adapter v1 against one process: B max gap {gap:.3g}, relative L2 {diff / step:.3g}, step {moved:.3g}")
    assert moved > 1e-3 and gap < moved / 10 and diff / step < 1e-3, (gap, diff / step, moved)


def test_mcts_on_two_learner_ranks_makes_its_dpo_steps_on_both(ranked):
    """Real search trees' pairs: both ranks score the reference log-probs and make each DPO step."""
    stack = ranked
    log_path = stack.data_dir / "stack" / "logs" / "trainer.log"
    start = len(log_path.read_text())
    out = stack.halo(*PAIRED_SEARCHES, "--name", "mcts-ranks")  # searches that give pairs
    assert out.returncode == 0, out.stdout + out.stderr
    run_id = out.stdout.split("run ", 1)[1].split()[0]
    status = stack.wait_run(run_id, {"finished"})
    metrics = [json.loads(x) for x in (Path(status["run_dir"]) / "metrics.jsonl").read_text().splitlines()]
    stepped = [m for m in metrics if m["dpo/pairs"] > 0]
    assert stepped, f"no preference pair in either search: {[m['dpo/pairs'] for m in metrics]}"
    assert status["policy_version"] == len(stepped)

    follower = _follower_lines(_after_the_run(log_path, start))
    calls = [line.split(" made", 1)[0] for line in follower if " made" in line]
    assert calls[0] == "resume" and calls.count("dpo_update") == len(stepped), follower
    for i, call in enumerate(calls):
        if call == "dpo_update":
            assert calls[i - 2 : i] == ["logprobs", "logprobs"], follower
    steps = [_figures(line) for line in follower if line.startswith("dpo_update made")]
    for mine, theirs in zip(steps, stepped, strict=True):
        assert mine["train/step"] == theirs["train/step"]
        assert mine["dpo/loss"] == pytest.approx(theirs["dpo/loss"], rel=1e-8)
        assert mine["dpo/grad_norm"] == pytest.approx(theirs["dpo/grad_norm"], rel=1e-8)


def test_two_ranks_killed_mid_run_resume_on_two_ranks_without_losing_or_double_counting(ranked):
    """A `kill -9` of the service's group mid-run (rank 0, the launcher and rank 1 gone: rank 1
    dies with its parent), then `halo stack up -s trainer`: both ranks resume the run from its
    checkpoint, and every job is used in a checkpointed update once."""
    stack = ranked
    log_path = stack.data_dir / "stack" / "logs" / "trainer.log"
    with stack.api() as api:
        created = api.post("/runs", json={**GRPO_RUN, "episodes": 12, "name": "ranks-resume"})
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
    stack.wait_run(run_id, {"running"}, at_least_updates=1)
    before = [stack.pid("trainer"), *ranks_of(stack.pid("trainer"))]
    start = len(log_path.read_text())
    stack.kill_and_restart_trainer()
    assert not [p for p in before if pid_alive(p)], before  # no rank outlived the launcher
    assert len(ranks_of(stack.pid("trainer"))) == 2

    status = stack.wait_run(run_id, {"finished"})
    # 12 episodes in jobs of one, 4 per update: 3 updates' worth, each job counted once.
    assert status["episodes_done"] == 12 and status["updates"] == 3 and status["policy_version"] == 3
    client = redis.Redis.from_url(stack.redis_url)
    assert len(list(client.scan_iter(f"halo:run:{run_id}:results:done:*"))) == 12
    assert client.xpending(f"halo:run:{run_id}:results", "learner")["pending"] == 0
    metrics = [json.loads(x) for x in (Path(status["run_dir"]) / "metrics.jsonl").read_text().splitlines()]
    assert [m["update"] for m in metrics] == [1, 2, 3], metrics  # no update written twice or skipped

    log = _after_the_run(log_path, start)
    assert f"resumed run {run_id}" in log, log[-3000:]
    follower = _follower_lines(log)
    calls = [line.split(" made", 1)[0] for line in follower if " made" in line]
    # The new rank 1 loaded the checkpoint with rank 0, then made the updates the crash left.
    assert calls[0] == "resume" and 1 <= calls.count("update") <= 2, follower
    assert calls.count("update") == calls.count("checkpoint"), follower


def test_a_stop_of_the_service_ends_every_rank_cleanly(ranked):
    """What `halo stack down` sends (SIGTERM to the service's process group) ends the launcher and
    both ranks, rank 0 telling rank 1 to exit."""
    stack = ranked
    log_path = stack.data_dir / "stack" / "logs" / "trainer.log"
    start = len(log_path.read_text())
    pids = _stop_trainer(stack)
    assert not [p for p in pids if pid_alive(p)], pids
    tail = log_path.read_text()[start:]
    assert "Traceback" not in tail and "stopped following rank 0" not in tail, tail
