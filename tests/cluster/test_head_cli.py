"""`halo cluster up | scale | status | down` as an operator runs them: real processes (Ray head,
supervisor), the real Redis, Ray's token auth; no rollout node joins, so the one asked for is
reported as unplaceable, with the reason, instead of being waited on."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from halo.cli.stack_processes import pid_alive
from tests.conftest import free_port


def halo(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "halo.cli.main", "cluster", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_up_reports_an_unplaceable_node_and_down_stops_everything(tmp_path, redis_url, key_prefix) -> None:
    pytest.importorskip("ray")
    env = {
        **os.environ,
        "HALO_DATA_DIR": str(tmp_path),
        "HALO_REDIS_URL": redis_url,
        "HALO_CLUSTER_RAY_PORT": str(free_port()),
        "HALO_CLUSTER_KEY_PREFIX": f"{key_prefix}:",
        "HALO_CLUSTER_ROLLOUT_NODES": "0",
        "HALO_CLUSTER_CREATE_DEADLINE_S": "2",
        "HALO_CLUSTER_SUPERVISE_EVERY_S": "0.5",
    }
    up = halo("up", env=env)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "ray start --address" in up.stdout
        token = (tmp_path / "cluster" / "ray_token").read_text()
        assert oct((tmp_path / "cluster" / "ray_token").stat().st_mode & 0o777) == "0o600"
        assert token not in up.stdout + up.stderr, "the token was printed"
        assert halo("status", env=env).returncode == 0
        started = [r["pid"] for r in json.loads((tmp_path / "cluster" / "head.json").read_text())]

        assert halo("scale", "1", env=env).returncode == 0
        for _ in range(60):
            status = halo("status", "--json", env=env)
            record = json.loads(status.stdout[: status.stdout.rindex("}") + 1])
            if record["nodes"] and record["nodes"][0]["state"] == "unplaceable":
                break
        assert status.returncode == 1
        assert "no node offers the 'rollout_node' resource" in record["nodes"][0]["reason"]

        again = halo("up", env=env)
        assert again.returncode == 1 and "already runs here" in again.stderr
    finally:
        down = halo("down", env=env)
    assert down.returncode == 0, down.stderr
    assert "stopped ray-head" in down.stdout
    assert not (tmp_path / "cluster" / "head.json").exists()
    assert not [pid for pid in started if pid_alive(pid)], "down left a head process running"
    gone = halo("status", env=env)
    assert gone.returncode == 1 and "the head is not up" in gone.stderr
