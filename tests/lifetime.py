"""Every process a test session starts ends with the session's runner, however the runner ends.

Two parts, both installed by ``install()`` (the root conftest calls it):

- SIGTERM runs the normal teardown. pytest tears fixtures down on KeyboardInterrupt but not on
  SIGTERM, whose default action ends the runner at once and orphans every service a fixture
  started. The first SIGTERM becomes KeyboardInterrupt; a second one ends the runner at once.
- A watchdog process stops what teardown could not (a SIGKILLed runner, a teardown that hung, a
  fixture interrupted halfway). It runs in a session of its own, so a signal to the runner's
  process group (a terminal's Ctrl-C, ``timeout``) leaves it alive to clean up. It polls the
  process table and remembers every process descended from the runner, with its process group,
  including those orphaned on the way (``halo stack up`` starts services in sessions of their own
  and exits; Playwright starts Chromium in a group of its own). When the runner is gone it sends
  SIGTERM to all of them and SIGKILL to what is left after a grace period. A process is known by
  pid and kernel start time, so a pid the kernel has since given to another program is never
  signalled. PR_SET_PDEATHSIG was not enough on its own: it reaches only direct children, fires
  when the forking *thread* ends, and cannot follow processes reparented to init.

A process started and orphaned between two polls would escape the table; fixtures that start
services ``register`` them (``popen``/``run`` do it), which the watchdog reads at once.

The runner of ``halo stack up`` from a shell is not a test runner: a user's stack outlives the
command that started it. Only test sessions install this.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from typing import NamedTuple

PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.25
GRACE_S = 5.0  # SIGTERM first: vLLM and Chromium clean up shared memory and profiles on it
GIVE_UP_S = 20.0

_watchdog: subprocess.Popen | None = None


# -- the runner's side -------------------------------------------------------------------------------
def install(config=None) -> None:
    """Start this runner's watchdog and make SIGTERM tear fixtures down. Once per process."""
    global _watchdog
    if _watchdog is not None or not sys.platform.startswith("linux"):
        return
    # Orphans (a service whose launcher exited, Chromium's double-forked crash handler) are
    # reparented to the runner instead of init, so they stay in the tree the watchdog walks.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    argv = [sys.executable, os.path.abspath(__file__), str(os.getpid()), str(start_id(os.getpid()))]
    # pytest captures fd 2 during configure; the watchdog's note about what it stopped belongs on the
    # real stderr, after the runner is gone.
    capman = config.pluginmanager.getplugin("capturemanager") if config is not None else None
    with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
        _watchdog = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _first_sigterm)


def _first_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, _second_sigterm)
    raise KeyboardInterrupt("SIGTERM: tearing the test session down")


def _second_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def watchdog_pid() -> int | None:
    return _watchdog.pid if _watchdog is not None else None


def register(proc: subprocess.Popen | int) -> None:
    """Tell the watchdog about a process just started (no-op outside an installed session)."""
    if _watchdog is None or _watchdog.stdin is None:
        return
    pid = proc if isinstance(proc, int) else proc.pid
    with contextlib.suppress(OSError, ValueError):
        _watchdog.stdin.write(f"{pid}\n".encode())
        _watchdog.stdin.flush()


def popen(args, **kwargs) -> subprocess.Popen:
    proc = subprocess.Popen(args, **kwargs)
    register(proc)
    return proc


def run(args, *, timeout: float | None = None, capture_output: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` whose process the watchdog knows from its first instant."""
    if capture_output:
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with popen(args, **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# -- the process table ---------------------------------------------------------------------------------
class Proc(NamedTuple):
    ppid: int
    pgid: int
    start: int
    zombie: bool


def start_id(pid: int) -> int | None:
    """The kernel's start time of ``pid``: with the pid, a process's identity."""
    entry = _stat(pid)
    return entry.start if entry else None


def _stat(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: count fields after the last ')'.
    fields = raw.rsplit(b")", 1)[1].split()
    return Proc(int(fields[1]), int(fields[2]), int(fields[19]), fields[0] in (b"Z", b"X"))


def table() -> dict[int, Proc]:
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (entry := _stat(int(name))) is not None:
            procs[int(name)] = entry
    return procs


def still_running(pids: Iterable[tuple[int, int]]) -> list[int]:
    """Which of ``(pid, start id)`` still run (zombies do not)."""
    now = table()
    return [pid for pid, start in pids if pid in now and now[pid].start == start and not now[pid].zombie]


# -- the watchdog ------------------------------------------------------------------------------------
class Watch:
    def __init__(self, runner: int, runner_start: int) -> None:
        self.runner, self.runner_start = runner, runner_start
        self.me = os.getpid()
        # Never whole groups these are in: the runner's is usually its shell's or make's too.
        self.spared_groups = {os.getpgrp(), _pgid(runner)}
        self.known: dict[int, int] = {}  # pid -> start id
        self.groups: set[int] = set()

    def runner_alive(self, procs: dict[int, Proc]) -> bool:
        entry = procs.get(self.runner)
        return entry is not None and entry.start == self.runner_start and not entry.zombie

    def learn(self, procs: dict[int, Proc], extra: Iterable[int] = ()) -> None:
        for pid in extra:
            if pid in procs and not procs[pid].zombie:
                self.known.setdefault(pid, procs[pid].start)
        self.known = {pid: s for pid, s in self.known.items() if pid in procs and procs[pid].start == s}
        children: dict[int, list[int]] = {}
        for pid, entry in procs.items():
            if not entry.zombie and pid != self.me:
                children.setdefault(entry.ppid, []).append(pid)
        todo = [*self.known, self.runner] if self.runner_alive(procs) else list(self.known)
        # Members of a group a known process leads or shares are the runner's too (one that was
        # orphaned between two polls still carries its group).
        todo += [pid for pid, e in procs.items() if e.pgid in self.groups and not e.zombie and pid != self.me]
        while todo:
            pid = todo.pop()
            if pid != self.runner and pid not in self.known:
                self.known[pid] = procs[pid].start
            todo.extend(c for c in children.get(pid, ()) if c not in self.known)
        live_groups = {procs[pid].pgid for pid in self.known}
        self.groups = {g for g in self.groups if any(e.pgid == g for e in procs.values())} | (
            live_groups - self.spared_groups
        )

    def stop_all(self) -> int:
        """SIGTERM everything known, SIGKILL what is left after the grace period; how many there were."""
        began = time.monotonic()
        termed: set[int] = set()
        while time.monotonic() - began < GIVE_UP_S:
            procs = table()
            self.learn(procs)
            targets = {pid: s for pid, s in self.known.items() if not procs[pid].zombie}
            if not targets:
                break
            late = time.monotonic() - began > GRACE_S
            for pid in targets:
                if late or pid not in termed:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
                    termed.add(pid)
            time.sleep(0.1)
        return len(termed)

    def run(self) -> None:
        stdin_open, pending = True, b""
        while True:
            fresh: list[int] = []
            if stdin_open:
                if select.select([0], [], [], POLL_S)[0]:
                    chunk = os.read(0, 4096)
                    stdin_open = bool(chunk)
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    fresh = [int(line) for line in lines if line.strip().isdigit()]
            else:
                time.sleep(POLL_S)
            procs = table()
            self.learn(procs, fresh)
            if not self.runner_alive(procs):
                break
        stopped = self.stop_all()
        if stopped:
            sys.stderr.write(
                f"[test session watchdog] the runner (pid {self.runner}) is gone; "
                f"stopped {stopped} process(es) it had left running\n"
            )


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return -1


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    runner, runner_start = int(sys.argv[1]), int(sys.argv[2])
    Watch(runner, runner_start).run()
