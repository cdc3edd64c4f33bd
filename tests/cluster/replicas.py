"""Stub policy replicas as real processes for the replica tests and the fan-out bench."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import httpx

from halo.settings import REPO_ROOT
from tests import lifetime
from tests.conftest import free_port


@dataclass
class StubReplica:
    replica_id: str
    port: int
    args: tuple[str, ...] = ()
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StubReplica:
        argv = [sys.executable, "-m", "tests.cluster.stub_replica", "--port", str(self.port), *self.args]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.proc = lifetime.popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, f"{self.replica_id} exited"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.1)
        raise AssertionError(f"{self.replica_id} not ready after {timeout_s} s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def start_replicas(count: int, *args: str, prefix: str = "r") -> list[StubReplica]:
    """``count`` stub replicas started at once (in parallel), each ready."""
    replicas = [StubReplica(f"{prefix}{i}", free_port(), tuple(args)).start() for i in range(count)]
    for replica in replicas:
        replica.wait_ready()
    return replicas
