"""Every process a test session starts ends with the session's runner, however the runner ends.

Three parts, all set up by ``install()`` (the root conftest calls it):

- SIGTERM runs the normal teardown. pytest tears fixtures down on KeyboardInterrupt but not on
  SIGTERM, whose default action ends the runner at once and orphans every service a fixture
  started. The first SIGTERM becomes KeyboardInterrupt; a second one ends the runner at once.
- The runner is a child subreaper: an orphan of any of its descendants (the services ``halo stack
  up`` starts in sessions of their own before it exits, Chromium's double-forked crash handler) is
  reparented to the runner instead of init, so it stays in the runner's tree while the runner lives.
- A watchdog process stops what teardown could not (a SIGKILLed runner, a teardown that hung, a
  fixture interrupted halfway). It runs in a session of its own, so a signal to the runner's
  process group (a terminal's Ctrl-C, ``timeout``) leaves it alive to clean up. It polls the
  process table and remembers every process in the runner's tree with its process group; once the
  runner is gone it sends SIGTERM to all of them (and to whatever they started since) and SIGKILL
  to what is left after a grace period. A process is known by pid and kernel start time, so a pid
  the kernel has since given to another program is never signalled. PR_SET_PDEATHSIG was not
  enough on its own: it reaches only direct children, fires when the forking *thread* ends, and
  does not follow processes to their new parent.

What escapes: a process that was started and lost its parent within one poll (0.25 s; longer
when the machine is starved) just before the runner died. Fixtures that start services
``register`` them (``popen``/``run`` do it), which the watchdog reads at once, so the services
themselves and everything they start later are always known.

The runner reaps the orphans it adopts once they exit (init used to), as far as the watchdog saw
them move to it from another parent; one orphaned within a poll of its birth stays a zombie until
the session ends.

``halo stack up`` run from a shell is unaffected: a user's stack outlives the command that
started it. Only test sessions install this.
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
READY_TIMEOUT_S = 60.0
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
        _watchdog = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    # A test must not start a stack before the watchdog has seen the tree once: a watchdog still
    # starting (seconds on a loaded machine) when the runner is killed would know nothing to stop.
    first = _read_line(_watchdog.stdout.fileno(), READY_TIMEOUT_S)
    if not first.startswith(b"watching"):
        sys.stderr.write(f"the test session watchdog did not start in {READY_TIMEOUT_S:.0f} s\n")
    threading.Thread(target=_reap_adopted, args=(_watchdog.stdout,), name="reap-adopted", daemon=True).start()
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _first_sigterm)


def _first_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, _second_sigterm)
    raise KeyboardInterrupt("SIGTERM: tearing the test session down")


def _second_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _read_line(fd: int, timeout_s: float) -> bytes:
    line, deadline = b"", time.monotonic() + timeout_s
    while not line.endswith(b"\n") and select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = os.read(fd, 1)
        if not chunk:
            break
        line += chunk
    return line


def _reap_adopted(pipe) -> None:
    """Reap the orphans the runner adopted (as subreaper) once they exit: init used to, and a zombie
    still looks alive to ``kill(pid, 0)``. Only pids the watchdog saw move to the runner from another
    parent: reaping a child the runner started itself would take its exit status from its Popen."""
    fd, pending, buf = pipe.fileno(), set(), b""
    while True:
        if select.select([fd], [], [], 1.0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                return
            *lines, buf = (buf + chunk).split(b"\n")
            pending.update(int(line) for line in lines if line.isdigit())
        for pid in list(pending):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    pending.discard(pid)
            except ChildProcessError:
                pending.discard(pid)


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


def _command_line(pid: int) -> str:
    """Its command line, else (a process that is exiting has none) its name in brackets."""
    for name, template in (("cmdline", "{}"), ("comm", "[{}]")):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/{name}", "rb") as fh:
            if text := fh.read().replace(b"\0", b" ").decode(errors="replace").strip():
                return template.format(text)
    return "?"


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
        self.born_to: dict[int, int] = {}  # pid -> its parent when first seen
        self.adopted: set[int] = set()
        self.groups: set[int] = set()

    def runner_alive(self, procs: dict[int, Proc]) -> bool:
        entry = procs.get(self.runner)
        return entry is not None and entry.start == self.runner_start and not entry.zombie

    def learn(self, procs: dict[int, Proc], extra: Iterable[int] = ()) -> None:
        for pid in extra:
            if pid in procs and not procs[pid].zombie:
                self.known.setdefault(pid, procs[pid].start)
        self.known = {pid: s for pid, s in self.known.items() if pid in procs and procs[pid].start == s}
        self.born_to = {pid: p for pid, p in self.born_to.items() if pid in self.known}
        self.adopted &= set(self.known)
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
        for pid in self.known:
            self.born_to.setdefault(pid, procs[pid].ppid)
        live_groups = {procs[pid].pgid for pid in self.known}
        self.groups = {g for g in self.groups if any(e.pgid == g for e in procs.values())} | (
            live_groups - self.spared_groups
        )

    def tell_adopted(self, procs: dict[int, Proc]) -> None:
        new = [p for p in self.known if procs[p].ppid == self.runner != self.born_to[p] and p not in self.adopted]
        if new:
            # Never block on a runner that does not read: a lost line only leaves a zombie.
            with contextlib.suppress(OSError):
                os.write(1, "".join(f"{pid}\n" for pid in new).encode())
            self.adopted.update(new)

    def stop_all(self) -> dict[int, str]:
        """SIGTERM everything known, SIGKILL what is left after the grace period; what there was
        (pid: command line), so that a leftover can be traced to the test that left it."""
        began = time.monotonic()
        termed: dict[int, str] = {}
        while time.monotonic() - began < GIVE_UP_S:
            procs = table()
            self.learn(procs)
            targets = {pid: s for pid, s in self.known.items() if not procs[pid].zombie}
            if not targets:
                break
            late = time.monotonic() - began > GRACE_S
            for pid in targets:
                if late or pid not in termed:
                    termed.setdefault(pid, _command_line(pid))
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
            time.sleep(0.1)
        return termed

    def run(self) -> None:
        stdin_open, pending, announced = True, b"", False
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
            if not announced:
                os.write(1, b"watching\n")
                announced = True
            self.tell_adopted(procs)
        stopped = self.stop_all()
        if stopped:
            which = "; ".join(f"{pid} {line[:120]}" for pid, line in sorted(stopped.items()))
            sys.stderr.write(
                f"[test session watchdog] the runner (pid {self.runner}) is gone; "
                f"stopped {len(stopped)} process(es) it had left running: {which}\n"
            )


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return -1


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.set_blocking(1, False)
    runner, runner_start = int(sys.argv[1]), int(sys.argv[2])
    Watch(runner, runner_start).run()
