"""`make up`'s bounded wait: run Compose's `up -d`, then read each container's state until every service
is ready, one fails, or the time is up; a failure ends with the service's last log lines and one line
saying why.

Why not Compose's own wait: a container that crashes at start under `restart: unless-stopped` goes
`restarting`, `running` (health `starting` again), `restarting`..., never `exited` nor `unhealthy`,
so Compose v2's `up -d`, which waits for the trainer's `depends_on: service_healthy` itself, waits
forever, and a loop polling those two states never ends either. This reads what Docker records
(`RestartCount`, `ExitCode`, `OOMKilled`, the health probes) and counts failed starts instead.

    python3 shared/halo/cli/compose_wait.py [--timeout S] [--max-failed-starts N] -- <compose command> up -d

Standard library only (Python 3.8+): a GPU box runs it with the host's python3 and no .venv. Exit
status 0 when every service is ready (running and healthy, a one-shot step exited 0), 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
ONEOFF_LABEL = "com.docker.compose.oneoff"
SHOWN_LOG_LINES = 20

# Progress worth echoing while a service starts: vLLM's stages (weights, compile, CUDA graphs, engine,
# HTTP server) and the policy launcher's own (model, warm-up, ready).
STAGES = [
    re.compile(p)
    for p in (
        r"starting vLLM \(",
        r"building the tiny",
        r"Loading weights took",
        r"Model loading took",
        r"torch\.compile takes .* in total",
        r"Directly load the compiled graph",
        r"[Cc]ompil\w+ .*took",
        r"Graph capturing finished",
        r"init engine .* took",
        r"Starting vLLM (API )?server on",
        r"warm-up request took",
        r"policy server listening on",
    )
]
# Log prefixes stripped before a line is shown as a cause: vLLM's "(Worker pid=12) ERROR 12-02 06:14:50
# [file.py:12] " and halo's "2026-12-02 06:14:09,941 ERROR policy halo.policy.server: ".
VLLM_PREFIX = re.compile(r"^\(\w+ pid=\d+\)\s+(?P<level>[A-Z]+)\s+\d\d-\d\d \d\d:\d\d:\d\d\s+\[[^\]]*\]\s*")
HALO_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+ (?P<level>[A-Z]+) \S+ \S+: ")
ARGPARSE_ERROR = re.compile(r"(?:^|\s)(\S+: error: .+)$")
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?::\s.*)?$")
# How a process ends when `docker stop` (Compose recreating a container) stops it: exit 0 on SIGTERM,
# 143 (128 + SIGTERM) unhandled, 137 (SIGKILL) after the stop timeout.
STOP_CODES = (0, 137, 143)
MEMORY_WORDS = re.compile(r"out of memory|OutOfMemory|\bOOM\b|Cannot allocate memory|oom-kill", re.IGNORECASE)


@dataclass(frozen=True)
class ContainerState:
    """What one `docker inspect` object says about a Compose container."""

    id: str
    name: str
    service: str
    oneoff: bool
    status: str  # created, running, restarting, paused, exited, dead, removing
    health: str | None  # starting, healthy, unhealthy; None without a healthcheck
    exit_code: int
    oom_killed: bool
    restart_count: int
    restart_policy: str  # no, always, unless-stopped, on-failure
    started_at: str
    created: str
    error: str
    health_output: str  # the last healthcheck probe's output

    @classmethod
    def from_inspect(cls, doc: dict) -> ContainerState:
        state = doc.get("State") or {}
        labels = (doc.get("Config") or {}).get("Labels") or {}
        health = state.get("Health") or None
        probes = (health or {}).get("Log") or []
        policy = ((doc.get("HostConfig") or {}).get("RestartPolicy") or {}).get("Name") or "no"
        return cls(
            id=doc.get("Id", ""),
            name=(doc.get("Name") or "").lstrip("/"),
            service=labels.get(SERVICE_LABEL, ""),
            oneoff=labels.get(ONEOFF_LABEL, "False") == "True",
            status=state.get("Status", ""),
            health=health.get("Status") if health else None,
            exit_code=int(state.get("ExitCode") or 0),
            oom_killed=bool(state.get("OOMKilled")),
            restart_count=int(doc.get("RestartCount") or 0),
            restart_policy=policy,
            started_at=state.get("StartedAt") or "",
            created=doc.get("Created") or "",
            error=state.get("Error") or "",
            health_output=" ".join(((probes[-1].get("Output") or "") if probes else "").split()),
        )

    @property
    def stopped(self) -> bool:
        return self.status in ("exited", "dead")


@dataclass
class Watch:
    """One container followed across polls. Failed starts are counted from increments of Docker's
    RestartCount (which `docker start` resets to 0) and from a run that ended stopped with a non-zero
    exit; a run that had ended before this wait began is not this start's failure."""

    restart_count: int  # at the last poll
    stale_run: str = ""  # StartedAt of a run that had ended before the wait began
    counted_run: str = ""  # StartedAt of the ended run already counted
    failed_starts: int = 0
    exit_codes: list[int] = field(default_factory=list)  # the failed starts' codes, as seen
    oom_killed: bool = False
    ready_at: float | None = None
    log_since: str = ""

    @classmethod
    def first_sight(cls, state: ContainerState, *, before_up: bool) -> Watch:
        if not before_up:  # created by this `up`: every restart it has had is this start's
            return cls(restart_count=0)
        return cls(restart_count=state.restart_count, stale_run=state.started_at if state.stopped else "")

    def update(self, state: ContainerState) -> int:
        """Record this poll's state; returns how many failed starts it revealed."""
        count = state.restart_count
        new = count - self.restart_count if count >= self.restart_count else count
        self.restart_count = count
        current = state.started_at != self.stale_run
        if state.stopped and state.exit_code != 0 and current and state.started_at != self.counted_run:
            self.counted_run = state.started_at
            new += 1
        if state.oom_killed and current:
            self.oom_killed = True
        if new:
            self.failed_starts += new
            if state.exit_code != 0:
                self.exit_codes.append(state.exit_code)
        return new


@dataclass(frozen=True)
class Verdict:
    kind: str  # ready, pending, failed
    what: str  # pending: its state in words; failed: the failure, as the one line's subject
    loop: bool = False  # failed by restarting in a loop (the waiter stops such a service)


def _exited(watch: Watch, state: ContainerState) -> str:
    code = watch.exit_codes[-1] if watch.exit_codes else state.exit_code
    if watch.oom_killed or state.oom_killed:
        return f"was killed for memory (OOMKilled, exit {code})"
    return f"exited {code}" if code else "exited"


def assess(state: ContainerState, watch: Watch, max_failed_starts: int, *, up_running: bool = False) -> Verdict:
    """Ready, pending or failed, from one container's state and what was seen of it before.

    ``up_running``: Compose's `up` has not returned, and may be stopping this container to recreate it.
    """
    if state.stopped:
        if state.exit_code == 0 and state.restart_policy in ("no", "on-failure") and not state.oom_killed:
            return Verdict("ready", "done (exited 0)")
        if watch.stale_run and state.started_at == watch.stale_run:
            return Verdict("pending", f"{state.status} before this wait began (up starts it again)")
        if up_running and state.exit_code in STOP_CODES and not state.oom_killed:
            return Verdict("pending", f"stopped (exit {state.exit_code}) while `up` runs: recreated or started again")
        if watch.failed_starts > 1:
            return Verdict("failed", f"{_exited(watch, state)} {_times(watch.failed_starts)} at start")
        return Verdict("failed", _exited(watch, state) + ("" if state.status == "exited" else f" ({state.status})"))
    if watch.failed_starts >= max_failed_starts:
        return Verdict("failed", f"{_exited(watch, state)} {_times(watch.failed_starts)} at start", loop=True)
    if state.status == "running":
        if state.health == "unhealthy":
            said = f" (last probe: {state.health_output[:200]})" if state.health_output else ""
            return Verdict("failed", f"is unhealthy: its healthcheck failed{said}")
        if state.health is None and state.restart_policy == "no":
            return Verdict("pending", "running (a one-shot step: ready once it exits 0)")
        if state.health in (None, "healthy"):
            return Verdict("ready", "healthy" if state.health else "running")
        what = "running, health: starting"
    elif state.status == "created":
        what = "created, not started (waits for its dependencies)"
    else:
        what = state.status
    if watch.failed_starts:
        what += f", {_exited(watch, state)} {_times(watch.failed_starts)} so far"
    return Verdict("pending", what)


def starting_failure(states: Sequence[ContainerState], watches: dict[str, Watch]) -> tuple | None:
    """The container that failed to start, if any did (the most failed starts first): for a Compose
    `up` that stopped on it."""
    failing = [s for s in states if watches[s.id].failed_starts or s.status == "restarting"]
    if not failing:
        return None
    state = max(failing, key=lambda s: watches[s.id].failed_starts)
    watch = watches[state.id]
    starts = max(watch.failed_starts, 1)
    return state, Verdict("failed", f"{_exited(watch, state)} {_times(starts)} at start", loop=not state.stopped)


STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def _instant(stamp: str) -> str:
    """An RFC 3339 time as Docker writes it (fraction digits trimmed) in a form that sorts as time does."""
    m = STAMP.match(stamp)
    return f"{m.group(1)}.{(m.group(2) or '').ljust(9, '0')}{m.group(3)}" if m else stamp


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _message(line: str) -> tuple[str, str]:
    """A log line without its logger's prefix, and its level ("" when it has none)."""
    line = line.strip()
    for prefix in (VLLM_PREFIX, HALO_PREFIX):
        m = prefix.match(line)
        if m:
            return line[m.end() :].strip(), m.group("level")
    return line, ""


def cause_of(lines: Sequence[str]) -> str:
    """The line of a failed start's log that says why: an argument parser's error, else the last
    exception raised, else a memory error, else the last ERROR-level line; "" when none says anything."""
    messages = [_message(line) for line in lines if line.strip()]
    for text, _ in reversed(messages):
        m = ARGPARSE_ERROR.search(text)
        if m:
            return m.group(1)
    for text, _ in reversed(messages):
        if EXCEPTION_LINE.match(text):
            return text
    for text, _ in reversed(messages):
        if MEMORY_WORDS.search(text):
            return text
    for text, level in reversed(messages):
        if level in ("ERROR", "CRITICAL") and not text.startswith("---"):
            return text
    return ""


def summary_of(lines: Sequence[str]) -> str:
    """The service's own last error line (halo's logging format), e.g. the policy launcher's
    "policy server failed to start: vLLM exited with code 2 before becoming healthy"."""
    for line in reversed(lines):
        m = HALO_PREFIX.match(line.strip())
        if m and m.group("level") in ("ERROR", "CRITICAL"):
            return line.strip()[m.end() :].strip()
    return ""


def failure_line(service: str, verdict: Verdict, lines: Sequence[str], *, stopped_hint: str = "") -> str:
    """The one line `make up` ends with."""
    summary, cause = summary_of(lines), cause_of(lines)
    said = [s for s in (summary, cause) if s]
    if len(said) == 2 and (cause in summary or summary in cause):
        said = [max(said, key=len)]
    why = ": " + "; ".join(s[:300] for s in said) if said else " (its log says nothing more; see its whole log)"
    return f"error: {service} {verdict.what}{why}{stopped_hint}"


# --- Docker and Compose ----------------------------------------------------------------------------


def _run(cmd: Sequence[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)


def inspect(ids: Iterable[str]) -> list[ContainerState]:
    ids = list(ids)
    if not ids:
        return []
    done = _run(["docker", "inspect", *ids])
    # A container removed between `ps` and `inspect` makes inspect exit 1 but still print the others.
    try:
        docs = json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        return []
    return [ContainerState.from_inspect(d) for d in docs]


def project_ids(project: str) -> list[str]:
    done = _run(["docker", "ps", "-a", "-q", "--no-trunc", "--filter", f"label={PROJECT_LABEL}={project}"])
    return done.stdout.split()


def compose_ids(compose: Sequence[str]) -> list[str]:
    done = _run([*compose, "ps", "-a", "-q"], timeout=300)
    return done.stdout.split() if done.returncode == 0 else []


def project_labels(ids: Iterable[str]) -> dict[str, str]:
    ids = list(ids)
    if not ids:
        return {}
    done = _run(["docker", "inspect", "-f", '{{.Id}} {{index .Config.Labels "' + PROJECT_LABEL + '"}}', *ids])
    out = {}
    for row in done.stdout.splitlines():
        parts = row.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def logs(container_id: str, *, until: str = "", since: str = "", tail: int = 200) -> list[str]:
    cmd = ["docker", "logs", "--tail", str(tail)]
    if until:
        cmd += ["--until", until]
    if since:
        cmd += ["--timestamps", "--since", since]
    done = subprocess.run(cmd + [container_id], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    # "\n" only: progress bars redraw with "\r", which is not a new log line (and carries no timestamp).
    return [line.rsplit("\r", 1)[-1] for line in done.stdout.decode("utf-8", "replace").split("\n") if line]


def exits_since(container_id: str, since: float) -> tuple[list[int], bool]:
    """The exit codes of the container's ends since ``since`` (Unix time) and whether the OOM killer
    struck, from Docker's event log: `inspect` keeps only the last exit, and a restarted container's
    reads 0 again."""
    done = _run(
        ["docker", "events", "--since", str(int(since)), "--until", str(int(time.time()) + 1)]
        + ["--filter", f"container={container_id}", "--filter", "event=die", "--filter", "event=oom"]
        + ["--format", '{{.Action}} {{index .Actor.Attributes "exitCode"}}'],
        timeout=60,
    )
    codes, oom = [], False
    for row in done.stdout.splitlines():
        action, _, code = row.partition(" ")
        if action == "oom":
            oom = True
        elif action == "die" and code.strip().lstrip("-").isdigit():
            codes.append(int(code))
    return codes, oom


def failed_run_log(state: ContainerState) -> list[str]:
    """The log of the container's last finished run: up to its current start when it runs again."""
    return logs(state.id, until=state.started_at if state.status == "running" else "")


class Up:
    """Compose's `up -d` in the background (v2 blocks in it on `depends_on` conditions), its output
    passed through and its last lines kept for a failure message."""

    def __init__(self, cmd: Sequence[str]):
        self.tail: deque[str] = deque(maxlen=20)
        self.proc = subprocess.Popen(
            list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            self.tail.append(line)
            sys.stderr.write(line + "\n")

    def poll(self) -> int | None:
        code = self.proc.poll()
        if code is not None:
            self.pump.join(timeout=5)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)


# --- the wait ---------------------------------------------------------------------------------------


class Waiter:
    def __init__(self, compose: Sequence[str], up_args: Sequence[str], timeout_s: float, max_failed_starts: int):
        self.compose, self.up_args = list(compose), list(up_args)
        self.timeout_s, self.max_failed_starts = timeout_s, max_failed_starts
        self.watches: dict[str, Watch] = {}
        self.t0 = time.monotonic()
        self.wall0 = time.time()
        self.announced: set[tuple[str, str]] = set()

    def say(self, text: str) -> None:
        sys.stderr.write(f"[make up {time.monotonic() - self.t0:4.0f}s] {text}\n")
        sys.stderr.flush()

    def run(self) -> int:
        services = _run([*self.compose, "config", "--services"], timeout=300).stdout.split()
        before = compose_ids(self.compose)  # a second `make up`: failed starts count from now
        labels = project_labels(before)
        project = next(iter(labels.values()), None)
        for s in inspect(before):
            self.watches[s.id] = Watch.first_sight(s, before_up=True)
        self.say(
            f"waiting up to {self.timeout_s:.0f} s for {', '.join(services) or 'the services'}; a service that fails"
            f" to start {self.max_failed_starts} times, exits or turns unhealthy ends the wait at once"
        )
        up = Up([*self.compose, *self.up_args])
        try:
            return self._loop(up, services, project)
        finally:
            up.stop()

    def _loop(self, up: Up, services: list[str], project: str | None) -> int:
        deadline = self.t0 + self.timeout_s
        while True:
            if project is None:
                project = next(iter(project_labels(compose_ids(self.compose)).values()), None)
            states = [s for s in inspect(project_ids(project)) if not s.oneoff] if project else []
            states.sort(key=lambda s: _instant(s.created))  # oldest first: a service's newest last
            code = up.poll()
            verdicts = {s.id: self._follow(s, up_running=code is None) for s in states}
            newest = list({s.service: s for s in states}.values())  # the one Compose keeps of each service
            failed = [(s, verdicts[s.id]) for s in newest if verdicts[s.id].kind == "failed"]
            if failed:
                return self._fail(up, *failed[0])
            by_service = {s.service: verdicts[s.id] for s in newest}
            if code is not None and code != 0:
                # Compose gives up on a dependency it sees unhealthy (what Docker reports while a
                # container waits to restart): the container is the cause, not Compose.
                blamed = starting_failure(states, self.watches)
                if blamed is not None:
                    return self._fail(up, *blamed)
                last = next((line for line in reversed(up.tail) if line.strip()), "")
                self.say(f"error: `{' '.join(self.up_args)}` exited {code}: {last}")
                return 1
            if code == 0 and all(by_service.get(svc, Verdict("pending", "")).kind == "ready" for svc in services):
                self.say(f"every service ready after {time.monotonic() - self.t0:.0f} s")
                return 0
            if time.monotonic() > deadline:
                pending = [
                    f"{svc} ({by_service[svc].what if svc in by_service else 'no container yet'})"
                    for svc in services
                    if by_service.get(svc, Verdict("pending", "")).kind != "ready"
                ]
                pending = pending or [f"`{' '.join(self.up_args)}` still running"]
                self.say(f"error: not ready after {self.timeout_s:.0f} s: {'; '.join(pending)}")
                return 1
            time.sleep(2.0)

    def _follow(self, state: ContainerState, *, up_running: bool) -> Verdict:
        watch = self.watches.get(state.id) or self.watches.setdefault(
            state.id, Watch.first_sight(state, before_up=False)
        )
        new = watch.update(state)
        if new:
            codes, oom = exits_since(state.id, self.wall0 - 1)
            watch.exit_codes = [c for c in codes if c != 0] or watch.exit_codes
            watch.oom_killed = watch.oom_killed or oom
        verdict = assess(state, watch, self.max_failed_starts, up_running=up_running)
        if new and verdict.kind != "failed":
            lines = failed_run_log(state)
            cause = cause_of(lines) or summary_of(lines)
            self.say(f"{state.service}: start {watch.failed_starts} failed ({_exited(watch, state)}): {cause[:300]}")
        if verdict.kind == "ready" and watch.ready_at is None:
            watch.ready_at = time.monotonic()
            if (state.service, verdict.what) not in self.announced:
                self.announced.add((state.service, verdict.what))
                self.say(f"{state.service} {verdict.what}")
        elif verdict.kind == "pending" and state.status == "running":
            self._stages(state, watch)
        return verdict

    def _stages(self, state: ContainerState, watch: Watch) -> None:
        since = watch.log_since or state.started_at
        for line in logs(state.id, since=since, tail=400):
            stamp, _, text = line.partition(" ")
            if not STAMP.match(stamp) or (watch.log_since and _instant(stamp) <= _instant(watch.log_since)):
                continue
            watch.log_since = stamp
            if any(p.search(text) for p in STAGES):
                self.say(f"{state.service}: {_message(text)[0][:200]}")

    def _fail(self, up: Up, state: ContainerState, verdict: Verdict) -> int:
        up.stop()
        lines = logs(state.id) if state.stopped else failed_run_log(state)
        hint = f"; its whole log: docker logs {state.name}"
        if verdict.loop:
            # Left alone it restarts forever (unless-stopped) and holds its card while it tries.
            _run([*self.compose, "stop", state.service], timeout=300)
            hint = f"; stopped it (it restarted in a loop){hint}"
        self.say(f"{state.service}'s last log lines:")
        for line in lines[-SHOWN_LOG_LINES:]:
            sys.stderr.write(f"  | {line[:300]}{' ...' if len(line) > 300 else ''}\n")
        sys.stderr.write(failure_line(state.service, verdict, lines, stopped_hint=hint) + "\n")
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compose_wait.py", description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for every service (1800)")
    parser.add_argument(
        "--max-failed-starts", type=int, default=2, help="failed starts of one service that end the wait (2)"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- <compose command> up -d")
    args = parser.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if "up" not in cmd or args.timeout <= 0 or args.max_failed_starts < 1:
        parser.error("usage: compose_wait.py [--timeout S>0] [--max-failed-starts N>=1] -- <compose command> up -d")
    at = len(cmd) - 1 - cmd[::-1].index("up")
    try:
        return Waiter(cmd[:at], cmd[at:], args.timeout, args.max_failed_starts).run()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: the stack is left as it is (make down stops it)\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
