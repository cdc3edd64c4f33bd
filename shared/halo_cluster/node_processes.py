"""A rollout node's processes on its own machine: started from a ``NodePlan``, watched, restarted.

Each process runs in a process group of its own and asks the kernel for SIGKILL when the thread
that started it dies (``PR_SET_PDEATHSIG``): when Ray kills or loses the node's actor, its env,
reward and workers go with it instead of holding their ports against the restarted actor. A job a
killed worker held stays pending in Redis and is reclaimed by another worker (``halo.queue``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from halo.cli.stack_processes import stop_group
from halo.schemas.cluster import ProcessState
from halo_cluster.node_plan import NodePlan, ProcessSpec, render

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class _Running:
    spec: ProcessSpec
    index: int
    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = None
    restarts: int = 0
    last_exit: int | None = None

    @property
    def name(self) -> str:
        return self.spec.name if self.spec.count == 1 else f"{self.spec.name}-{self.index}"


class NodeProcesses:
    """Start every process of ``plan`` on ``host``, wait for their readiness URLs, restart the ones
    that die (at most ``max_restarts`` each; past that a process is reported dead, not retried)."""

    def __init__(self, plan: NodePlan, host: str, log_dir: Path, max_restarts: int) -> None:
        self.plan, self.host, self.max_restarts = plan, host, max_restarts
        self.log_dir = log_dir
        self.ports = {name: free_port(host) for name in plan.ports}
        self.urls = {name: render(url, host, self.ports) for name, url in plan.urls.items()}
        self._running: list[_Running] = []
        for spec in plan.processes:
            for index in range(spec.count):
                argv = [render(word, host, self.ports, index) for word in spec.argv]
                env = {key: render(value, host, self.ports, index) for key, value in spec.env.items()}
                log = log_dir / f"{spec.name}-{index}.log"
                self._running.append(_Running(spec, index, argv, env, log))

    def start(self) -> None:
        """Start the processes with a readiness URL (sites, env, reward) and wait for each, then
        the rest (the workers); raises with the log's tail on a process that exits or is not ready
        within the plan's timeout (the actor then fails to be created and the supervisor reports
        why). Workers wait because they take jobs the moment they start: beside a cold env, a
        rejoining node's first jobs failed on "env not reachable" and were replaced."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        services = [r for r in self._running if r.spec.ready_url]
        for running in services:
            self._spawn(running)
        deadline = time.monotonic() + self.plan.ready_timeout_s
        for running in services:
            self._wait_ready(running, render(running.spec.ready_url, self.host, self.ports, running.index), deadline)
        for running in self._running:
            if not running.spec.ready_url:
                self._spawn(running)

    def _spawn(self, running: _Running) -> None:
        with open(running.log, "ab") as log:
            running.proc = subprocess.Popen(
                running.argv,
                env={**os.environ, **running.env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    def _wait_ready(self, running: _Running, url: str, deadline: float) -> None:
        assert running.proc is not None
        while time.monotonic() < deadline:
            if running.proc.poll() is not None:
                raise RuntimeError(f"{running.name} exited with {running.proc.returncode}: {self._tail(running)}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2.0).is_success:
                    return
            time.sleep(0.2)
        raise RuntimeError(
            f"{running.name} not ready at {url} after {self.plan.ready_timeout_s:.0f} s: {self._tail(running)}"
        )

    @staticmethod
    def _tail(running: _Running, lines: int = 5) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(running.log.read_text(errors="replace").strip().splitlines()[-lines:])
        return "(no log)"

    def poll(self) -> list[ProcessState]:
        """Restart what died (within its restart budget) and report every process."""
        for running in self._running:
            proc = running.proc
            if proc is None or proc.poll() is None:
                continue
            running.last_exit = proc.returncode
            running.proc = None
            if running.restarts < self.max_restarts:
                running.restarts += 1
                self._spawn(running)
        return [
            ProcessState(
                name=r.name,
                pid=r.proc.pid if r.proc else None,
                alive=r.proc is not None and r.proc.poll() is None,
                restarts=r.restarts,
                last_exit=r.last_exit,
            )
            for r in self._running
        ]

    def stop(self, timeout_s: float = 10.0) -> None:
        for running in reversed(self._running):
            if running.proc is not None and running.proc.poll() is None:
                stop_group(running.proc.pid, timeout_s)
                running.proc.wait()
