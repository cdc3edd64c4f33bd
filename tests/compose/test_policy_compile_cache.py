"""A recreated policy container reuses the compile cache (the compile-cache volume) instead of compiling again.

On the CPU target vLLM compiles no graph, but its first request builds Inductor C++ kernels with g++
(the launcher's warm-up is that first request). The policy is started alone (`up -d --no-deps
policy`) in a project of its own, then recreated (`--force-recreate`, a new container on the same
volumes): the first start must write cache files under /cache, the second none. Each start's
warm-up time is printed (figures in docs/compose.md). Opt-in: HALO_COMPOSE_TEST=1.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compose.own_stack import compose, down, stack_env

OPT_IN = "HALO_COMPOSE_TEST"
PROJECT = f"halo-compile-cache-{os.getpid()}"
READY = "policy server listening on"
# Files under /cache modified since the container started (its StartedAt, UTC, from docker inspect).
NEW_FILES = (
    "import datetime, os, sys; t = datetime.datetime.fromisoformat(sys.argv[1][:26])"
    ".replace(tzinfo=datetime.timezone.utc).timestamp(); "
    "fs = [os.path.join(d, f) for d, _, n in os.walk('/cache') for f in n]; "
    "print(len(fs), sum(os.path.getmtime(f) >= t for f in fs))"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.compose,
    pytest.mark.skipif(
        os.environ.get(OPT_IN) != "1",
        reason=f"builds and runs the Docker Compose stack (minutes); set {OPT_IN}=1 (docs/compose.md)",
    ),
]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = stack_env(tmp_path, PROJECT, 29500)
    assert compose(env, "build", "-q", "policy").returncode == 0
    yield env
    down(env)


def _start(env: dict[str, str], *flags: str) -> tuple[int, int, str]:
    """(files in /cache, files this start wrote, its warm-up line) once the policy serves."""
    started = compose(env, "up", "-d", "--no-deps", *flags, "policy")
    assert started.returncode == 0, started.stderr[-2000:]
    name = f"{PROJECT}_policy_1"
    deadline = time.monotonic() + 1200
    while READY not in (log := compose(env, "logs", "--no-color", "policy").stdout):
        assert time.monotonic() < deadline, log[-3000:]
        assert "failed to start" not in log, log[-3000:]
        time.sleep(5)
    warmup = next(line for line in log.splitlines() if "warm-up request took" in line)
    started_at = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.StartedAt}}", name], capture_output=True, text=True, timeout=60
    ).stdout.strip()
    counted = compose(env, "exec", "-T", "policy", "python3", "-c", NEW_FILES, started_at)
    total, new = (int(x) for x in counted.stdout.split())
    return total, new, warmup.split("halo.policy.server: ")[-1]


def test_a_recreated_policy_container_compiles_nothing_again(env: dict[str, str]) -> None:
    total, new, warmup = _start(env)
    print(f"first start: {new} of {total} cache files written; {warmup}")
    assert new > 0 and new == total
    total, new, warmup = _start(env, "--force-recreate")
    print(f"recreated: {new} of {total} cache files written; {warmup}")
    assert total > 0 and new == 0
