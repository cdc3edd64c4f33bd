"""A real reward service (uvicorn subprocess) on a free port, its Redis keys under a test prefix."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
import redis

from tests import lifetime
from tests.conftest import REDIS_URL, free_port


def start_reward_service(prefix: str, ready_path: str = "/ready", **env: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    environ = {
        **os.environ,
        "HALO_REDIS_URL": REDIS_URL,
        "HALO_REWARD_KEY_PREFIX": prefix,
        "HALO_REWARD_PORT": str(port),
        "HALO_LOG_LEVEL": "WARNING",
        **env,
    }
    proc = lifetime.popen([sys.executable, "-m", "halo_reward"], env=environ)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"reward service exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}{ready_path}", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("reward service did not become ready in 30 s")


def drop_prefix(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)


@pytest.fixture(scope="module")
def reward_service() -> Iterator[tuple[str, str]]:
    """(base URL, key prefix) of a running reward service; every key it wrote is removed after."""
    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except redis.ConnectionError as exc:  # pragma: no cover - the setup step provides Redis
        pytest.fail(f"Redis is not reachable at {REDIS_URL}: {exc}")
    prefix = f"test:reward:{uuid.uuid4().hex[:10]}:"
    proc, base = start_reward_service(prefix)
    try:
        yield base, prefix
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        drop_prefix(prefix)
