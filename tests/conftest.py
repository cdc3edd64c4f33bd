"""Fixtures shared by every test tier: the real Redis on this machine, free ports.

Every process a test starts ends with the test runner, however the runner ends (tests/lifetime.py).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
import redis
import redis.asyncio as aioredis

from tests import lifetime

REDIS_URL = os.environ.get("HALO_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def pytest_configure(config: pytest.Config) -> None:
    lifetime.install(config)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url() -> str:
    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except redis.ConnectionError as exc:  # pragma: no cover - the setup step provides Redis
        pytest.fail(f"Redis is not reachable at {REDIS_URL}: {exc}. Start it or set HALO_TEST_REDIS_URL.")
    return REDIS_URL


@pytest.fixture
def key_prefix(redis_url: str):
    """A unique key prefix; every key under it is deleted after the test."""
    prefix = f"test:{uuid.uuid4().hex[:12]}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)


@pytest.fixture
async def aredis(redis_url: str):
    client = aioredis.from_url(redis_url)
    yield client
    await client.aclose()


def start_service(module: str, env: dict[str, str], ready_url: str, timeout_s: float = 120) -> subprocess.Popen:
    """``python -m <module>`` with ``env`` added, once ``ready_url`` answers 200 (killed on timeout)."""
    proc = lifetime.popen([sys.executable, "-m", module], env={**os.environ, **env})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{module} exited with {proc.returncode}")
        try:
            if httpx.get(ready_url, timeout=5).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"{module} not ready after {timeout_s} s")


def stop_services(procs: list[subprocess.Popen]) -> None:
    """Stop what ``start_service`` started, last first; kill what has not exited after 20 s."""
    for proc in reversed(procs):
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def tiny_model_dir():
    """The project's tiny Qwen3-VL (cached under ``<data_dir>/models`` by content hash)."""
    from halo_model.tiny import build_tiny_model

    return build_tiny_model()


def noise_png(width: int, height: int, seed: int) -> bytes:
    """A seeded random-pixel RGB PNG: distinct screenshots of any size for model-input tests."""
    import io
    import random

    from PIL import Image

    rng = random.Random(seed)
    image = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="session")
def vllm_server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session vLLM server's output (not there when ``HALO_TEST_POLICY_PORT`` reuses a server)."""
    return tmp_path_factory.mktemp("vllm") / "server.log"


@pytest.fixture(scope="session")
def vllm_server(tiny_model_dir, vllm_server_log: Path):
    """A tiny-model vLLM server. ``HALO_TEST_POLICY_PORT`` reuses one already running on that port
    (started with ``HALO_POLICY_MAX_LORA_RANK=8 python -m halo_policy``) instead of starting one."""
    # Defined here, not in tests/policy/conftest.py: a session fixture imported into a test module is
    # a fixture of that module, and each such module started a vLLM of its own (about 2 min each).
    from halo.settings.policy import PolicySettings
    from tests.policy.conftest import policy_server

    reuse = os.environ.get("HALO_TEST_POLICY_PORT")
    if reuse:
        root = httpx.get(f"http://127.0.0.1:{reuse}/v1/models", timeout=10).json()["data"][0]["root"]
        yield PolicySettings(port=int(reuse), model=root, max_lora_rank=8)
        return
    with policy_server(tiny_model_dir, vllm_server_log) as port:
        yield PolicySettings(port=port, model=str(tiny_model_dir), max_lora_rank=8)
