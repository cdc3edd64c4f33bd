"""The embedded local stack: every service as a plain local process, the same programs Compose runs.

``halo stack up`` starts Redis (only when ``HALO_REDIS_URL`` is not reachable), the clone server,
the environment, reward and policy (vLLM on the CPU) services and the trainer, each in its own
process group, waits until each answers its readiness check, and records what it started in
``<data_dir>/stack/stack.json`` so ``down`` stops exactly that.

Never two instances of one service: whether a service already runs is decided by liveness
(``/health``, which a busy service still answers), by who holds its port, and by the processes the
state file recorded, never by readiness (``/ready`` fails whenever a dependency does, or is slow
while the machine is loaded). The state file only grows while its processes live: every process
any ``up`` started is stopped by ``down``, and each is recorded with its start time so that a pid
the kernel has since given to another program is never signalled. Logs in
``<data_dir>/stack/logs/<service>.log`` are appended to, with a header line per start.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import redis

from halo.settings import HaloSettings
from halo.settings.env import EnvSettings
from halo.settings.policy import PolicySettings
from halo.settings.reward import RewardSettings
from halo.settings.sites import SitesSettings
from halo.settings.trainer import TrainerSettings

# Generous on purpose: on a loaded 2-core machine a healthy trainer has been seen taking seconds to
# answer, and a probe that gives up too early is what once started a second trainer.
HEALTH_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 15.0


@dataclass
class ServiceSpec:
    name: str
    module: str  # started as `python -m <module>`
    base_url: str
    ready_path: str = "/ready"
    start_timeout_s: float = 120.0
    # HALO services name themselves in /health's body; vLLM's /health has an empty body.
    names_itself: bool = True


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


@dataclass
class StackState:
    redis_url: str
    processes: list[ProcessRecord] = field(default_factory=list)

    def live(self, service: str) -> list[ProcessRecord]:
        return [p for p in self.processes if p.service == service and same_process(p)]


@dataclass
class Probe:
    """What answers on a service's port."""

    alive: bool  # /health answered 200 as this service
    port_held: bool
    pid: int | None = None  # the pid /health reported
    other: str | None = None  # what answers instead, when not this service


def _url(host: str, port: int) -> str:
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"


def service_specs(services: list[str] | None = None) -> list[ServiceSpec]:
    """The stack's services in start order (dependencies first)."""
    sites, env, reward = SitesSettings(), EnvSettings(), RewardSettings()
    policy, trainer = PolicySettings(), TrainerSettings()
    specs = [
        ServiceSpec("sites", "halo_sites", _url(sites.host, sites.port)),
        ServiceSpec("env", "halo_env", _url(env.host, env.port)),
        ServiceSpec("reward", "halo_reward", _url(reward.host, reward.port)),
        # vLLM: /health is its readiness (503 while the engine is dead); first start builds the
        # tiny model and compiles, so it gets a long timeout.
        ServiceSpec("policy", "halo_policy", _url(policy.host, policy.port), "/health", 600.0, names_itself=False),
        ServiceSpec("trainer", "halo_trainer", _url(trainer.host, trainer.port)),
    ]
    return [s for s in specs if services is None or s.name in services]


# -- process identity ------------------------------------------------------------------------------
def process_start_id(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot): with the pid, a process's identity."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


_MODULES = {"redis": "redis-server", **{s: f"halo_{s}" for s in ("sites", "env", "reward", "policy", "trainer")}}


def same_process(record: ProcessRecord) -> bool:
    """Whether ``record``'s process still runs (and is still that process, not a recycled pid)."""
    if not _pid_alive(record.pid):
        return False
    if record.start_id is not None:
        return process_start_id(record.pid) == record.start_id
    return _MODULES.get(record.service, record.service) in _cmdline(record.pid)


def _pid_alive(pid: int | None) -> bool:
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


# -- state file --------------------------------------------------------------------------------------
def state_path(settings: HaloSettings | None = None) -> Path:
    return (settings or HaloSettings()).data_dir / "stack" / "stack.json"


def load_state(settings: HaloSettings | None = None) -> StackState | None:
    path = state_path(settings)
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    processes = [ProcessRecord(**p) for p in raw.get("processes", [])]
    # State files written before processes were recorded with their start time.
    for s in raw.get("services", []):
        if s.get("started_by_stack") and s.get("pid"):
            processes.append(ProcessRecord(s["name"], s["pid"], None, s.get("url", ""), s.get("log")))
    if raw.get("redis_pid"):
        processes.append(ProcessRecord("redis", raw["redis_pid"], None))
    return StackState(redis_url=raw["redis_url"], processes=processes)


def save_state(state: StackState, settings: HaloSettings | None = None) -> None:
    path = state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(settings: HaloSettings, say: Callable[[str], None]) -> Iterator[None]:
    """One ``up`` or ``down`` at a time per data folder (two shells running `halo train` at once)."""
    path = settings.data_dir / "stack" / "lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("another `halo stack up` or `down` is running; waiting for it")
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


# -- probes ------------------------------------------------------------------------------------------
def is_ready(url: str, path: str = "/ready", timeout_s: float = READY_TIMEOUT_S) -> bool:
    try:
        return httpx.get(url + path, timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def is_alive(url: str, service: str | None = None, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """Liveness: ``/health`` answers 200 (as ``service``, when given). A busy service is alive."""
    try:
        response = httpx.get(url + "/health", timeout=timeout_s)
    except httpx.HTTPError:
        return False
    if response.status_code != 200:
        return False
    return service is None or _health_name(response) == service


def _health_name(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("service") if isinstance(body, dict) else None


def port_held(url: str) -> bool:
    """Whether something accepts connections on ``url``'s port (what a new instance would bind)."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=2):
            return True
    except OSError:
        return False


def probe(spec: ServiceSpec, timeout_s: float = HEALTH_TIMEOUT_S) -> Probe:
    try:
        response = httpx.get(spec.base_url + "/health", timeout=timeout_s)
    except httpx.HTTPError as exc:
        return Probe(False, port_held(spec.base_url), other=f"no /health answer ({type(exc).__name__})")
    name = _health_name(response)
    body = response.json() if name else {}
    if response.status_code == 200 and (name == spec.name or not spec.names_itself):
        return Probe(True, True, pid=body.get("pid"))
    what = f"HALO service {name!r}" if name else f"something answering /health with HTTP {response.status_code}"
    return Probe(False, True, other=what)


def redis_reachable(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, ValueError):
        return False


# -- up ------------------------------------------------------------------------------------------------
def _open_log(path: Path, what: str) -> int:
    """Append (never truncate) a header line for this start; the child writes after it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.write(fd, f"\n===== {stamp} halo stack up: starting {what} =====\n".encode())
    return fd


def _spawn(service: str, argv: list[str], log_path: Path, env: dict[str, str] | None, url: str) -> ProcessRecord:
    fd = _open_log(log_path, " ".join([Path(argv[0]).name, *argv[1:]]))
    try:
        proc = subprocess.Popen(argv, stdout=fd, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    finally:
        os.close(fd)
    return ProcessRecord(service, proc.pid, process_start_id(proc.pid), url, str(log_path), time.time())


def ensure_redis(
    settings: HaloSettings, state: StackState, logs: Path, say: Callable[[str], None]
) -> tuple[str, ProcessRecord | None]:
    """Use ``HALO_REDIS_URL`` when it answers, else a local redis-server for the stack."""
    if redis_reachable(settings.redis_url):
        return settings.redis_url, None
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(f"Redis is not reachable at {settings.redis_url} and redis-server is not installed")
    port = settings.stack_redis_port
    url = f"redis://127.0.0.1:{port}/0"
    if redis_reachable(url):
        return url, None
    if state.live("redis"):
        raise RuntimeError(f"the stack's redis-server (pid {state.live('redis')[0].pid}) does not answer on {url}")
    say(f"Redis not reachable at {settings.redis_url}; starting redis-server on port {port}")
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    record = _spawn("redis", argv, logs / "redis.log", None, url)
    deadline = time.monotonic() + 15
    while not redis_reachable(url):
        if not _pid_alive(record.pid) or time.monotonic() > deadline:
            raise RuntimeError(f"redis-server did not start; see {logs / 'redis.log'}")
        time.sleep(0.1)
    return url, record


def up(services: list[str] | None = None, say: Callable[[str], None] = print) -> StackState:
    """Start what is not running yet (never a second instance) and wait until every service is ready."""
    settings = HaloSettings()
    logs = settings.data_dir / "stack" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with _locked(settings, say):
        previous = load_state(settings)
        # Only processes that still run are kept; nothing still running is ever forgotten.
        state = StackState(
            redis_url=previous.redis_url if previous else settings.redis_url,
            processes=[p for p in (previous.processes if previous else []) if same_process(p)],
        )
        redis_url, redis_record = ensure_redis(settings, state, logs, say)
        state.redis_url = redis_url
        if redis_record:
            state.processes.append(redis_record)
        save_state(state, settings)
        env = {**os.environ, "HALO_REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1"}
        for spec in service_specs(services):
            # Later services' readiness checks depend on earlier ones (env needs sites, trainer
            # needs everything), so each is ready before the next starts.
            _up_one(spec, state, settings, logs, env, say)
        return state


def _up_one(
    spec: ServiceSpec,
    state: StackState,
    settings: HaloSettings,
    logs: Path,
    env: dict[str, str],
    say: Callable[[str], None],
) -> None:
    ours = state.live(spec.name)
    found = probe(spec)
    if found.alive:
        mine = next((p for p in ours if p.pid == found.pid), None) if found.pid else (ours[0] if ours else None)
        whose = "" if mine else "; not started by this stack, so `halo stack down` leaves it"
        pid = f"pid {found.pid}, " if found.pid else ""
        say(f"  {spec.name:<8} already running at {spec.base_url} ({pid}alive{whose})")
        _wait_ready(spec, None, say, quiet_if_ready=True)
        return
    if ours:
        # Our own process holds (or is about to bind) the port but does not answer /health yet:
        # starting up, or too busy to answer. Wait for it; a second one could only fail to bind.
        pids = ", ".join(str(p.pid) for p in ours)
        say(f"  {spec.name:<8} pid {pids} (started earlier) does not answer /health yet; waiting, not starting another")
        try:
            _wait_ready(spec, ours[0], say)
            return
        except ProcessExited:
            # It was dying, not starting (killed a moment ago, say): its port is free again.
            say(f"  {spec.name:<8} pid {pids} exited instead of answering; starting a new one")
            found = probe(spec)
    if found.port_held:
        port = urlsplit(spec.base_url).port
        raise RuntimeError(
            f"port {port} ({spec.name}'s port, {spec.base_url}) is held by another process "
            f"({found.other}), not by a {spec.name} service this stack can use; stop that process "
            f"or give {spec.name} another port (HALO_{spec.name.upper()}_PORT)"
        )
    log_path = logs / f"{spec.name}.log"
    record = _spawn(spec.name, [sys.executable, "-m", spec.module], log_path, env, spec.base_url)
    state.processes.append(record)
    save_state(state, settings)
    say(f"  {spec.name:<8} starting (pid {record.pid}, log {log_path})")
    _wait_ready(spec, record, say)


class ProcessExited(RuntimeError):
    """The process a wait depended on is gone."""


def _wait_ready(
    spec: ServiceSpec, record: ProcessRecord | None, say: Callable[[str], None], quiet_if_ready: bool = False
) -> None:
    """Wait until ``spec`` is ready; ``record`` is the process that must stay alive meanwhile."""
    deadline = time.monotonic() + spec.start_timeout_s
    while time.monotonic() < deadline:
        if record is not None and not same_process(record):
            tail = Path(record.log).read_text(errors="replace")[-2000:] if record.log else ""
            raise ProcessExited(f"{spec.name} (pid {record.pid}) exited while starting; log tail:\n{tail}")
        if is_ready(spec.base_url, spec.ready_path):
            if not quiet_if_ready:
                say(f"  {spec.name:<8} ready at {spec.base_url}")
            return
        time.sleep(0.5)
    where = f"; see {record.log}" if record and record.log else ""
    raise RuntimeError(
        f"{spec.name} at {spec.base_url} not ready after {spec.start_timeout_s:.0f} s{where} "
        "(no second instance was started; `halo health` shows which dependency fails)"
    )


# -- down ----------------------------------------------------------------------------------------------
def down(say: Callable[[str], None] = print, timeout_s: float = 20.0) -> None:
    """Stop every process any ``up`` started (process groups: vLLM's workers go too)."""
    settings = HaloSettings()
    with _locked(settings, say):
        state = load_state(settings)
        if state is None:
            say("no local stack recorded")
            return
        # Reverse start order: the trainer before what it calls, Redis last.
        for record in reversed(state.processes):
            if not same_process(record):
                say(
                    f"  {record.service:<8} pid {record.pid} gone (exited, or the pid is another program's now): left alone"
                )
                continue
            _stop_group(record.pid, timeout_s)
            say(f"  {record.service:<8} stopped (pid {record.pid})")
        state_path(settings).unlink(missing_ok=True)


def _stop_group(pgid: int, timeout_s: float) -> None:
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


# -- status --------------------------------------------------------------------------------------------
def status() -> list[dict]:
    """Liveness and readiness of each service (and Redis), whoever started them."""
    settings = HaloSettings()
    state = load_state(settings)
    redis_url = state.redis_url if state else settings.redis_url
    rows = [{"service": "redis", "url": redis_url, "alive": redis_reachable(redis_url), "ready": None}]
    for spec in service_specs():
        alive = probe(spec).alive
        ready = is_ready(spec.base_url, spec.ready_path) if alive else False
        rows.append({"service": spec.name, "url": spec.base_url, "alive": alive, "ready": ready})
    return rows
