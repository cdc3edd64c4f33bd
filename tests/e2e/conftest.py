"""The whole embedded stack on free ports and a temporary data folder, started once for the e2e package.

Starting a stack (Redis, clone server, Chromium, reward, vLLM, trainer) took 34-43 s a module on a
2-core machine; the modules share one instead. Each module gets it with every service answering (a
service a test killed and did not restart is started again) and leaves it with no run going: a
trainer resumes every run its Redis lists as running, so a run left over would be resumed by the next
module's trainer restart, and would hold the trainer's one run slot.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from halo.cli.stack_probes import is_alive
from tests import lifetime
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


class Stack:
    def __init__(self, data_dir: Path) -> None:
        """Every stack runs a redis-server of its own (started by ``halo stack up``): a trainer resumes
        any run its Redis lists as running, so a shared database would hand this stack's trainer the
        runs another stack (or an interrupted earlier test session) left there."""
        self.data_dir = data_dir
        self.ports = {name: free_port() for name in ("sites", "env", "reward", "policy", "trainer")}
        url = {name: f"http://127.0.0.1:{port}" for name, port in self.ports.items()}
        redis_port = free_port()
        self.redis_url = f"redis://127.0.0.1:{redis_port}/0"
        self.env = {
            **os.environ,
            "HALO_DATA_DIR": str(data_dir),
            "HALO_REDIS_URL": self.redis_url,
            "HALO_SITES_PORT": str(self.ports["sites"]),
            "HALO_ENV_PORT": str(self.ports["env"]),
            "HALO_ENV_SITES_URL": url["sites"],
            "HALO_REWARD_PORT": str(self.ports["reward"]),
            "HALO_POLICY_PORT": str(self.ports["policy"]),
            "HALO_TRAINER_PORT": str(self.ports["trainer"]),
            "HALO_TRAINER_ENV_URL": url["env"],
            "HALO_TRAINER_REWARD_URL": url["reward"],
            "HALO_TRAINER_POLICY_URL": url["policy"],
            "HALO_TRAINER_JOB_CLAIM_IDLE_S": "5",
            "HALO_STACK_REDIS_PORT": str(redis_port),
        }
        self.url = url

    def halo(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        # Registered at once: an orphaned `halo stack up` would go on starting the stack.
        return lifetime.run(
            [sys.executable, "-m", "halo.cli.main", *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def state(self) -> dict:
        return json.loads((self.data_dir / "stack" / "stack.json").read_text())

    def pid(self, service: str) -> int:
        # The newest process recorded for the service (an earlier one may have been killed).
        return [p["pid"] for p in self.state()["processes"] if p["service"] == service][-1]

    def kill_and_restart_trainer(self) -> None:
        """SIGKILL the trainer's process group (a ``kill -9`` of the service), then ``halo stack up -s trainer``."""
        os.killpg(self.pid("trainer"), signal.SIGKILL)
        # Learner ranks run in sessions of their own and die with their launcher (PR_SET_PDEATHSIG),
        # a moment after it: rank 0 may answer /health until then.
        deadline = time.monotonic() + 15
        while True:
            try:
                httpx.get(f"{self.url['trainer']}/health", timeout=2)
            except httpx.HTTPError:
                break
            assert time.monotonic() < deadline, "the trainer still answers 15 s after its group was killed"
            time.sleep(0.1)
        restarted = self.halo("stack", "up", "-s", "trainer")
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr

    def api(self) -> httpx.Client:
        """The run API as the user's tools call it: with the token `halo stack up` made for this
        stack's data folder (the local stack always has one: halo.local_token)."""
        token = (self.data_dir / "stack" / "trainer-token").read_text().strip()
        return httpx.Client(base_url=self.url["trainer"], timeout=30, headers={"Authorization": f"Bearer {token}"})

    def wait_run(self, run_id: str, states: set[str], timeout_s: float = 900, at_least_updates: int = 0) -> dict:
        deadline = time.monotonic() + timeout_s
        with self.api() as api:
            while time.monotonic() < deadline:
                try:
                    status = api.get(f"/runs/{run_id}").json()
                except httpx.HTTPError:
                    time.sleep(1)
                    continue
                if status["state"] in states and status["updates"] >= at_least_updates:
                    return status
                if status["state"] == "failed":
                    raise AssertionError(f"run failed: {status['error']}")
                time.sleep(1)
        raise AssertionError(f"run {run_id} not in {states} after {timeout_s} s: {status}")


@contextlib.contextmanager
def running(s: Stack) -> Iterator[Stack]:
    """``halo stack up`` (the test fails with the services' log tails if it does not), then down."""
    up = s.halo("stack", "up")
    if up.returncode != 0:
        logs = s.data_dir / "stack" / "logs"
        tails = {p.name: p.read_text(errors="replace")[-1500:] for p in logs.glob("*.log")} if logs.exists() else {}
        s.halo("stack", "down")
        pytest.fail(f"stack did not come up:\n{up.stdout}\n{up.stderr}\n{json.dumps(tails, indent=1)}")
    try:
        yield s
    finally:
        s.halo("stack", "down", timeout=120)


ENDED = {"stopped", "finished", "failed"}


def end_runs(s: Stack, timeout_s: float = 300) -> list[str]:
    """Stop every run that has not ended and wait until each has; returns the ones it stopped."""
    with s.api() as api:
        going = [r["run_id"] for r in api.get("/runs").json() if r["state"] not in ENDED]
        for run_id in going:
            api.post(f"/runs/{run_id}/stop", json={})
    for run_id in going:
        s.wait_run(run_id, ENDED, timeout_s=timeout_s)
    return going


@pytest.fixture(scope="package")
def shared_stack(tmp_path_factory):
    with running(Stack(tmp_path_factory.mktemp("stack"))) as s:
        yield s


@pytest.fixture(scope="module")
def stack(shared_stack: Stack):
    """The package's stack for one module: every service answering and no run going at the start;
    its environment put back and its runs stopped at the end."""
    s, env = shared_stack, dict(shared_stack.env)
    if down := [name for name, url in s.url.items() if not is_alive(url)]:
        up = s.halo("stack", "up")
        assert up.returncode == 0, f"{down} down, and did not come up again:\n{up.stdout}\n{up.stderr}"
    # A trainer that an earlier module left dead resumed that module's runs when it started again.
    if left := end_runs(s):
        sys.stderr.write(f"\ne2e: stopped runs an earlier module left going: {left}\n")
    yield s
    s.env = env
    with contextlib.suppress(httpx.HTTPError):  # a trainer left dead: the next module's start sees to it
        if left := end_runs(s):
            sys.stderr.write(f"\ne2e: stopped runs a module left going: {left}\n")
