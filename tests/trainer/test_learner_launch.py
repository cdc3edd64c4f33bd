"""``HALO_TRAINER_LEARNER_RANKS``: ``python -m halo_trainer`` as the launcher of its learner's ranks
(``halo_trainer.learner.launch``). A run on two ranks with real rollouts, and a clean stop, are in
``tests/e2e/test_learner_ranks.py``; here: what it refuses, a rank that fails, a launcher killed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import httpx
import pytest
import torch

from halo.cli.stack_processes import parent_of, pid_alive
from halo_trainer.learner import launch
from tests import lifetime
from tests.conftest import free_port


def test_one_rank_or_the_cpu_needs_no_card():
    assert launch.problem(1, "cuda") is None
    assert launch.problem(4, "cpu") is None


def test_more_ranks_than_cards_is_refused_naming_both(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    problem = launch.problem(4, "cuda")
    assert "HALO_TRAINER_LEARNER_RANKS=4" in problem and "sees 2 card(s) here (CUDA_VISIBLE_DEVICES=4,5)" in problem
    assert "set the ranks to 2" in problem
    assert launch.problem(2, "cuda") is None


def test_a_device_naming_one_card_is_refused_with_ranks():
    problem = launch.problem(2, "cuda:1")
    assert "HALO_TRAINER_DEVICE=cuda:1" in problem and "CUDA_VISIBLE_DEVICES" in problem


def test_one_machine_meets_on_the_loopback_and_several_at_node_0s_rendezvous():
    assert launch.launcher_argv(2) == [
        "--standalone", "--local-addr=127.0.0.1", "--nproc-per-node=2", "--module", "halo_trainer",
    ]  # fmt: skip
    assert launch.launcher_argv(1, 2, 1, "10.0.0.1:29500") == [
        "--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1", "--master-port=29500",
        "--nproc-per-node=1", "--module", "halo_trainer",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"HALO_TRAINER_LEARNER_NODES": "2"}, "needs HALO_TRAINER_LEARNER_RENDEZVOUS=host:port"),
        ({"HALO_TRAINER_LEARNER_NODES": "2", "HALO_TRAINER_LEARNER_RENDEZVOUS": "head"}, "not 'head'"),
        ({"HALO_TRAINER_LEARNER_NODE_RANK": "1"}, "a node's rank is 0 to 0"),
    ],
)
def test_learner_nodes_without_a_place_to_meet_are_refused_before_anything_starts(env, said):
    """One line from the service, exit 2: no launcher waits on a rendezvous that cannot happen."""
    done = subprocess.run(
        [sys.executable, "-m", "halo_trainer"],
        env={k: v for k, v in os.environ.items() if not k.startswith("HALO_TRAINER_")} | env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and said in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def _trainer(env: dict[str, str]) -> subprocess.Popen:
    return lifetime.popen(
        [sys.executable, "-m", "halo_trainer"],
        env={**os.environ, "HALO_TRAINER_LEARNER_RANKS": "2", "HALO_TRAINER_TARGET": "cpu", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as the stack starts it
    )


def ranks_of(launcher: int) -> list[int]:
    """The launcher's children: the ranks (each in a session of its own)."""
    return [int(pid) for pid in filter(str.isdigit, os.listdir("/proc")) if parent_of(int(pid)) == launcher]


@pytest.mark.slow
def test_a_rank_that_fails_ends_every_rank_with_one_line(tmp_path):
    """Rank 0 cannot start (no Redis): the launcher ends rank 1 too and says which rank exited how."""
    proc = _trainer(
        {
            "HALO_DATA_DIR": str(tmp_path),
            "HALO_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
            "HALO_TRAINER_PORT": str(free_port()),
        }
    )
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, out
    assert re.search(r"halo_trainer: the learner's ranks stopped \(rank 0: exit [1-9]\d*; rank 1: exit 1\)", out), out
    assert "halo_trainer rank 1: stopped following rank 0" in out


@pytest.mark.slow
def test_a_killed_launcher_takes_its_ranks_with_it(tmp_path):
    """SIGKILL to the service's process group (the stack's last resort, a `kill -9`) reaches the
    launcher only: each rank, in a session of its own, ends with it (its parent-death signal), and
    rank 0 frees the API's port."""
    redis_port, port = free_port(), free_port()
    redis_proc = lifetime.popen(
        [shutil.which("redis-server"), "--port", str(redis_port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    proc = _trainer(
        {
            "HALO_DATA_DIR": str(tmp_path),
            "HALO_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "HALO_TRAINER_PORT": str(port),
        }
    )
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the trainer did not answer /health"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        ranks = ranks_of(proc.pid)
        assert len(ranks) == 2, ranks
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while any(pid_alive(p) for p in ranks) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in ranks if pid_alive(p)], "a rank outlived its launcher"
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
    finally:
        for p in [proc.pid, *ranks_of(proc.pid)]:
            if pid_alive(p):
                os.kill(p, signal.SIGKILL)
        redis_proc.terminate()
        redis_proc.wait(timeout=10)
