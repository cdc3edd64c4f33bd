"""Stopping a child that runs in its own process group: vLLM, and the replica sidecar beside it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def terminate_group(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGTERM to ``proc``'s group, SIGKILL after ``grace_s``; nothing when it has already exited."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
