"""The operating-system processes of the local stack: who a recorded process is, starting one with its
log, and stopping its whole process group.

A process is identified by its pid together with the kernel's start time of that pid, so that a pid
the kernel has since given to another program is never taken for (or signalled as) ours.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ProcessRecord:
    """One process the stack started. ``start_id`` is the kernel's start time of ``pid`` (None in
    state files written before it was recorded: those are matched by command line instead)."""

    service: str
    pid: int
    start_id: int | None
    url: str = ""
    log: str | None = None
    started_at: float = 0.0


# -- process identity ------------------------------------------------------------------------------
def _stat_field(pid: int, index: int) -> int | None:
    """Field ``index`` of ``/proc/<pid>/stat``, counted after the command name (0 is the state);
    None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return int(stat.rsplit(")", 1)[1].split()[index])


def process_start_id(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot): with the pid, a process's identity."""
    return _stat_field(pid, 19)


def parent_of(pid: int) -> int | None:
    """``pid``'s parent, None when it is gone."""
    return _stat_field(pid, 1)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


_MODULES = {"redis": "redis-server", **{s: f"halo_{s}" for s in ("sites", "env", "reward", "policy", "trainer")}}


def same_process(record: ProcessRecord) -> bool:
    """Whether ``record``'s process still runs (and is still that process, not a recycled pid)."""
    if not pid_alive(record.pid):
        return False
    if record.start_id is not None:
        return process_start_id(record.pid) == record.start_id
    return _MODULES.get(record.service, record.service) in _cmdline(record.pid)


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    _reap(pid)  # a child of this process that exited is a zombie until reaped: not alive
    if _zombie(pid):  # nor is one whose parent never reaps it (a container's init, say)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


# -- start -----------------------------------------------------------------------------------------
def _open_log(path: Path, what: str) -> int:
    """Append (never truncate) a header line for this start; the child writes after it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.write(fd, f"\n===== {stamp} halo stack up: starting {what} =====\n".encode())
    return fd


def spawn(service: str, argv: list[str], log_path: Path, env: dict[str, str] | None, url: str) -> ProcessRecord:
    fd = _open_log(log_path, " ".join([Path(argv[0]).name, *argv[1:]]))
    try:
        proc = subprocess.Popen(argv, stdout=fd, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    finally:
        os.close(fd)
    return ProcessRecord(service, proc.pid, process_start_id(proc.pid), url, str(log_path), time.time())


# -- stop ------------------------------------------------------------------------------------------
def stop_group(pgid: int, timeout_s: float) -> None:
    """SIGTERM the process group, SIGKILL what is left after ``timeout_s``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    _reap(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies still count for killpg; a group whose only members are zombies is done.
    return any(_pgid_of(pid) == pgid and not _zombie(pid) for pid in _pids())


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()] if os.path.isdir("/proc") else []


def _pgid_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
