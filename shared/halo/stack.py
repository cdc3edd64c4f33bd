"""The embedded local stack: every service as a plain local process, the same programs Compose runs.

``halo stack up`` starts Redis (only when ``HALO_REDIS_URL`` is not reachable), the clone server,
the environment, reward and policy (vLLM on the CPU) services and the trainer, each in its own
process group with its log in ``<data_dir>/stack/logs``, waits until each answers its readiness
check, and records what it started in ``<data_dir>/stack/stack.json`` so ``down`` stops exactly
that. A service already answering on its port is reused, not started twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
import redis

from halo.settings import HaloSettings
from halo.settings.env import EnvSettings
from halo.settings.policy import PolicySettings
from halo.settings.reward import RewardSettings
from halo.settings.sites import SitesSettings
from halo.settings.trainer import TrainerSettings


@dataclass
class ServiceSpec:
    name: str
    module: str  # started as `python -m <module>`
    base_url: str
    ready_path: str = "/ready"
    start_timeout_s: float = 120.0


@dataclass
class ServiceState:
    name: str
    url: str
    pid: int | None = None  # None when the stack found it already running
    log: str | None = None
    started_by_stack: bool = False


@dataclass
class StackState:
    redis_url: str
    redis_pid: int | None = None
    services: list[ServiceState] = field(default_factory=list)


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
        ServiceSpec("policy", "halo_policy", _url(policy.host, policy.port), "/health", 600.0),
        ServiceSpec("trainer", "halo_trainer", _url(trainer.host, trainer.port)),
    ]
    return [s for s in specs if services is None or s.name in services]


def state_path(settings: HaloSettings | None = None) -> Path:
    return (settings or HaloSettings()).data_dir / "stack" / "stack.json"


def load_state(settings: HaloSettings | None = None) -> StackState | None:
    path = state_path(settings)
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return StackState(
        redis_url=raw["redis_url"],
        redis_pid=raw.get("redis_pid"),
        services=[ServiceState(**s) for s in raw.get("services", [])],
    )


def save_state(state: StackState, settings: HaloSettings | None = None) -> None:
    path = state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    os.replace(tmp, path)


def is_ready(url: str, path: str = "/ready", timeout_s: float = 2.0) -> bool:
    try:
        return httpx.get(url + path, timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def redis_reachable(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, ValueError):
        return False


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ensure_redis(settings: HaloSettings, logs: Path, say: Callable[[str], None]) -> tuple[str, int | None]:
    """Use ``HALO_REDIS_URL`` when it answers, else start a local redis-server for the stack."""
    if redis_reachable(settings.redis_url):
        return settings.redis_url, None
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(f"Redis is not reachable at {settings.redis_url} and redis-server is not installed")
    port = settings.stack_redis_port
    url = f"redis://127.0.0.1:{port}/0"
    if redis_reachable(url):
        return url, None
    say(f"Redis not reachable at {settings.redis_url}; starting redis-server on port {port}")
    log = open(logs / "redis.log", "ab")  # noqa: SIM115 - handed to the child process
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 15
    while not redis_reachable(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"redis-server did not start; see {logs / 'redis.log'}")
        time.sleep(0.1)
    return url, proc.pid


def up(services: list[str] | None = None, say: Callable[[str], None] = print) -> StackState:
    """Start what is not running yet and wait until every service is ready."""
    settings = HaloSettings()
    logs = settings.data_dir / "stack" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    previous = load_state(settings)
    redis_url, redis_pid = ensure_redis(settings, logs, say)
    if previous and previous.redis_pid and _pid_alive(previous.redis_pid) and redis_pid is None:
        redis_pid = previous.redis_pid
    state = StackState(redis_url=redis_url, redis_pid=redis_pid)
    known = {s.name: s for s in (previous.services if previous else [])}
    wanted = {spec.name for spec in service_specs(services)}
    # Services started earlier and not part of this call stay recorded, so `down` stops them too.
    state.services = [s for s in known.values() if s.name not in wanted and (_pid_alive(s.pid) or not s.pid)]
    env = {**os.environ, "HALO_REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1"}
    starting: list[tuple[ServiceSpec, subprocess.Popen]] = []
    for spec in service_specs(services):
        if is_ready(spec.base_url, spec.ready_path):
            old = known.get(spec.name)
            state.services.append(old if old and _pid_alive(old.pid) else ServiceState(spec.name, spec.base_url))
            say(f"  {spec.name:<8} already running at {spec.base_url}")
            continue
        log_path = logs / f"{spec.name}.log"
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the child process
        proc = subprocess.Popen(
            [sys.executable, "-m", spec.module], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        state.services.append(ServiceState(spec.name, spec.base_url, proc.pid, str(log_path), True))
        starting.append((spec, proc))
        say(f"  {spec.name:<8} starting (pid {proc.pid}, log {log_path})")
        # Later services' readiness checks depend on earlier ones (env needs sites, trainer
        # needs everything), so wait for each before starting the next.
        save_state(state, settings)
        _wait_ready(spec, proc, log_path, say)
    save_state(state, settings)
    return state


def _wait_ready(spec: ServiceSpec, proc: subprocess.Popen, log_path: Path, say: Callable[[str], None]) -> None:
    deadline = time.monotonic() + spec.start_timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
            raise RuntimeError(f"{spec.name} exited with code {proc.returncode} while starting; log tail:\n{tail}")
        if is_ready(spec.base_url, spec.ready_path):
            say(f"  {spec.name:<8} ready at {spec.base_url}")
            return
        time.sleep(0.5)
    raise RuntimeError(f"{spec.name} not ready after {spec.start_timeout_s:.0f} s; see {log_path}")


def down(say: Callable[[str], None] = print, timeout_s: float = 20.0) -> None:
    """Stop every process this stack started (process groups: vLLM's workers go too)."""
    settings = HaloSettings()
    state = load_state(settings)
    if state is None:
        say("no local stack recorded")
        return
    pids = [(s.name, s.pid) for s in reversed(state.services) if s.started_by_stack and s.pid]
    if state.redis_pid:
        pids.append(("redis", state.redis_pid))
    for name, pid in pids:
        if not _pid_alive(pid):
            continue
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + timeout_s
        while _pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if _pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
        say(f"  {name:<8} stopped")
    state_path(settings).unlink(missing_ok=True)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def status() -> list[dict]:
    """Liveness and readiness of each service (and Redis), whoever started them."""
    settings = HaloSettings()
    state = load_state(settings)
    redis_url = state.redis_url if state else settings.redis_url
    rows = [{"service": "redis", "url": redis_url, "healthy": redis_reachable(redis_url), "ready": None}]
    for spec in service_specs():
        healthy = is_ready(spec.base_url, "/health")
        ready = is_ready(spec.base_url, spec.ready_path) if healthy else False
        rows.append({"service": spec.name, "url": spec.base_url, "healthy": healthy, "ready": ready})
    return rows
