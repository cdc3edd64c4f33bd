"""The whole embedded stack on free ports and a temporary data folder, started once per module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import REDIS_URL, free_port

ROOT = Path(__file__).resolve().parents[2]


class Stack:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.ports = {name: free_port() for name in ("sites", "env", "reward", "policy", "trainer")}
        url = {name: f"http://127.0.0.1:{port}" for name, port in self.ports.items()}
        self.env = {
            **os.environ,
            "HALO_DATA_DIR": str(data_dir),
            "HALO_REDIS_URL": REDIS_URL,
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
        }
        self.url = url

    def halo(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run(
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

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.url["trainer"], timeout=30)

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


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("stack"))
    up = s.halo("stack", "up")
    if up.returncode != 0:
        logs = s.data_dir / "stack" / "logs"
        tails = {p.name: p.read_text(errors="replace")[-1500:] for p in logs.glob("*.log")} if logs.exists() else {}
        s.halo("stack", "down")
        pytest.fail(f"stack did not come up:\n{up.stdout}\n{up.stderr}\n{json.dumps(tails, indent=1)}")
    yield s
    s.halo("stack", "down", timeout=120)
