"""Child processes of the `halo` commands that run another entry point (`halo view`, `halo eval`, ...):
the child ends when the command does.

``subprocess.run`` alone is not enough: a SIGTERM to the CLI (``kill``, ``timeout``, a supervisor)
ends the Python process at once, without cleanup, and its child, e.g. ``halo view``'s web server,
keeps running and keeps its port. So the child is started in a process group of its own and the CLI
forwards SIGTERM, SIGINT (Ctrl-C) and SIGHUP to that group, waits for it to exit, and kills the group
if it has not after ``grace_s``. On Linux the child also asks the kernel for SIGTERM when the CLI dies
(``PR_SET_PDEATHSIG``), which covers a SIGKILL of the CLI, where no handler runs.

Why a group of its own: Ctrl-C in a terminal signals the whole foreground group. Were the child in
the CLI's group, it would get SIGINT twice (the terminal's and the forwarded one), and uvicorn, like
most servers, takes a second SIGINT as "stop now, skip cleanup". In its own group it gets it once.
The cost is that the child is not the terminal's foreground group: these entry points never read
standard input, and writing to the terminal is still allowed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to send this process SIGTERM when the thread that forked it dies (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def run_child(argv: Sequence[str], *, grace_s: float = 10.0, **popen_kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(argv)`` whose child (and the child's group) stops when this process is signalled.

    Returns the completed process; its ``returncode`` is the child's. The first signal is forwarded
    and the child gets ``grace_s`` to exit before its group is killed; a second signal is forwarded too
    (a second Ctrl-C tells a server to skip its cleanup, as it would without this wrapper).
    ``exit_code(result)`` is the status the CLI should exit with.
    """
    preexec = _die_with_parent if sys.platform.startswith("linux") else None
    proc = subprocess.Popen(list(argv), process_group=0, preexec_fn=preexec, **popen_kwargs)
    received: list[tuple[int, float]] = []

    def forward(signum: int, _frame) -> None:
        received.append((signum, time.monotonic()))
        _signal_group(proc.pid, signum)

    previous = {}
    for signum in FORWARDED:
        with contextlib.suppress(ValueError):  # not the main thread: leave the handlers alone
            previous[signum] = signal.signal(signum, forward)
    try:
        stdout, stderr = _wait(proc, received, grace_s)
    except BaseException:
        # An exception here (a bug, an outer handler raising) must not leave the child behind.
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received:
        # The child has exited; what it started in its group (a worker, a browser) may not have.
        _signal_group(proc.pid, signal.SIGTERM)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    result.signalled = received[0][0] if received else None  # type: ignore[attr-defined]
    return result


def _wait(proc: subprocess.Popen, received: list[tuple[int, float]], grace_s: float):
    """``proc.communicate()``, in slices so that a child that ignores the forwarded signal is killed."""
    while True:
        try:
            return proc.communicate(timeout=0.2)
        except subprocess.TimeoutExpired:
            if received and time.monotonic() - received[0][1] > grace_s:
                _signal_group(proc.pid, signal.SIGKILL)


def exit_code(result: subprocess.CompletedProcess) -> int:
    """The CLI's exit status: the child's, or ``128 + signal`` when the CLI was asked to stop."""
    signalled = getattr(result, "signalled", None)
    return 128 + signalled if signalled else result.returncode
