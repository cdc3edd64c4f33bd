"""The head's data server (``python -m halo.store serve``) as a real process for the store tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests import lifetime
from tests.conftest import free_port


def serve_data(root: Path, token: str, timeout_s: float = 120) -> tuple[subprocess.Popen, str]:
    """Serve ``root`` on a free loopback port; returns the process and its URL once it answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "HALO_DATA_DIR": str(root), "HALO_STORE_TOKEN": token, "HALO_STORE_PORT": str(port)}
    proc = lifetime.popen([sys.executable, "-m", "halo.store", "serve"], env=env)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"the data server did not answer at {url} (exit {proc.poll()})")
