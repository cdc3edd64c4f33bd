"""`halo stack up|status|down` with real processes, real Redis (started by the stack when absent)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
HALO = [sys.executable, "-m", "halo.cli.main"]


@pytest.mark.slow
def test_stack_up_starts_redis_and_services_then_down_stops_them(tmp_path):
    ports = {name: free_port() for name in ("sites", "env", "reward", "redis")}
    env = {
        **os.environ,
        "HALO_DATA_DIR": str(tmp_path),
        "HALO_REDIS_URL": "redis://127.0.0.1:1/0",  # unreachable: the stack must start its own
        "HALO_STACK_REDIS_PORT": str(ports["redis"]),
        "HALO_SITES_PORT": str(ports["sites"]),
        "HALO_ENV_PORT": str(ports["env"]),
        "HALO_ENV_SITES_URL": f"http://127.0.0.1:{ports['sites']}",
        "HALO_REWARD_PORT": str(ports["reward"]),
    }
    args = ["-s", "sites", "-s", "env", "-s", "reward"]
    try:
        up = subprocess.run(
            [*HALO, "stack", "up", *args[:4]], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"starting redis-server on port {ports['redis']}" in up.stdout
        # a later call for one more service keeps the earlier ones recorded (`down` stops them all)
        more = subprocess.run(
            [*HALO, "stack", "up", *args[4:]], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert more.returncode == 0, more.stdout + more.stderr
        up.stdout += more.stdout
        for name in ("sites", "env", "reward"):
            assert f"{name:<8} ready at http://127.0.0.1:{ports[name]}" in up.stdout
            assert httpx.get(f"http://127.0.0.1:{ports[name]}/ready").status_code == 200
        again = subprocess.run(
            [*HALO, "stack", "up", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert again.returncode == 0 and again.stdout.count("already running") == 3, again.stdout
        status = subprocess.run([*HALO, "stack", "status"], env=env, cwd=ROOT, capture_output=True, text=True)
        assert f"redis://127.0.0.1:{ports['redis']}/0" in status.stdout
    finally:
        down = subprocess.run([*HALO, "stack", "down"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stderr
    assert "redis    stopped" in down.stdout
    for name in ("sites", "env", "reward"):
        assert f"{name:<8} stopped" in down.stdout
    for name in ("sites", "env", "reward"):
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{ports[name]}/health", timeout=1)
    assert not (tmp_path / "stack" / "stack.json").exists()
