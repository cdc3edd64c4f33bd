"""`halo stack down` stops vLLM cleanly: the stack's own start code (`halo stack up -s policy`) on
test ports and a test data folder, then `halo stack down`; the policy log has none of what the
old group-wide SIGTERM left there (vLLM's EngineDeadError traceback, leaked semaphores)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from halo_policy.stop_race import NOTE
from tests.conftest import REDIS_URL, free_port
from tests.shared.test_stack import _processes_of

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

ROOT = Path(__file__).resolve().parents[2]


def test_stack_down_stops_vllm_without_a_traceback(tiny_model_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "HALO_DATA_DIR": str(tmp_path),
        "HALO_REDIS_URL": REDIS_URL,
        "HALO_POLICY_PORT": str(port),
        "HALO_POLICY_MODEL": str(tiny_model_dir),
        "HALO_POLICY_TARGET": "cpu",
        "HALO_POLICY_MAX_LORA_RANK": "8",
    }
    halo = [sys.executable, "-m", "halo.cli.main", "stack"]
    try:
        up = subprocess.run(
            [*halo, "up", "-s", "policy"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=900
        )
        assert up.returncode == 0, up.stdout + up.stderr
    finally:
        down = subprocess.run([*halo, "down"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert down.returncode == 0 and "policy   stopped" in down.stdout, down.stdout + down.stderr
    log = (tmp_path / "stack" / "logs" / "policy.log").read_text(errors="replace")
    stop = log[log.index("stopping vLLM") :]
    assert "API server: shutdown triggered" in stop and "Application shutdown complete" in stop, stop[-4000:]
    for bad in ("Traceback", "leaked semaphore", "leaked shared_memory", "killing its processes"):
        assert bad not in log, stop[-4000:]
    # vLLM's shutdown race, where it happened, is the one line halo_policy.stop_race writes for it.
    assert all(NOTE.strip() in line for line in log.splitlines() if "EngineDeadError" in line), stop[-4000:]
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
    assert not _processes_of(tmp_path)  # vLLM's engine and worker too
