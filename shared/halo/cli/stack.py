"""The embedded local stack: every service as a plain local process, the same programs Compose runs.

``halo stack up`` starts its own Redis (``stack_redis``: unless ``HALO_REDIS_URL`` names one), the clone server,
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

This module is the lifecycle (``up``, ``down``, ``status``); its parts live beside it:
``stack_processes`` (process identity, spawning, stopping process groups), ``stack_probes``
(liveness, readiness, ports, Redis), ``stack_redis`` (which Redis, and starting the stack's own) and
``stack_state`` (the state file and its lock).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from halo.cli.stack_probes import is_ready, probe, redis_reachable
from halo.cli.stack_processes import ProcessRecord, parent_of, same_process, spawn, stop_group
from halo.cli.stack_redis import ensure_redis, planned_url
from halo.cli.stack_state import StackState, load_state, locked, save_state, state_path
from halo.local_token import ensure_token
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
    # HALO services name themselves in /health's body; vLLM's /health has an empty body.
    names_itself: bool = True
    stop_timeout_s: float = 0.0  # at `down`, SIGKILL after this long at least (down's own timeout otherwise)


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
        # vLLM stops its engine within its shutdown timeout, and halo_policy kills what is left
        # 10 s later: killed sooner, its engine processes would outlive it.
        ServiceSpec(
            "policy",
            "halo_policy",
            _url(policy.host, policy.port),
            "/health",
            600.0,
            names_itself=False,
            stop_timeout_s=policy.shutdown_timeout_s + 15.0,
        ),
        ServiceSpec("trainer", "halo_trainer", _url(trainer.host, trainer.port)),
    ]
    return [s for s in specs if services is None or s.name in services]


# -- up ------------------------------------------------------------------------------------------------
def up(services: list[str] | None = None, say: Callable[[str], None] = print) -> StackState:
    """Start what is not running yet (never a second instance) and wait until every service is ready."""
    settings = HaloSettings()
    logs = settings.data_dir / "stack" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with locked(settings, say):
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
        # The trainer alone gets the run API's token: HALO_TRAINER_API_TOKEN, else the stack's own
        # random one (halo.local_token), so that only the user's tools can change a run.
        trainer_env = {**env, "HALO_TRAINER_API_TOKEN": ensure_token(TrainerSettings())}
        for spec in service_specs(services):
            # Later services' readiness checks depend on earlier ones (env needs sites, trainer
            # needs everything), so each is ready before the next starts.
            _up_one(spec, state, settings, logs, trainer_env if spec.name == "trainer" else env, say)
            if spec.name == "policy":
                _await_capabilities(redis_url, say)
        return state


def _await_capabilities(redis_url: str, say: Callable[[str], None], timeout_s: float = 60.0) -> None:
    """Wait until the policy service advertises what its vLLM serves (halo_policy.capabilities): it
    does so after its warm-up, seconds after vLLM's /health answers, and a run submitted in between
    would miss the trainer's submit-time checks. Bounded: without the record, runs are checked at
    their start, as before."""
    import redis

    from halo.schemas.policy_server import capabilities_key

    policy = PolicySettings()
    key = capabilities_key(policy.served_model_name, policy.port)
    client = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if client.exists(key):
                return
            time.sleep(0.2)
    except redis.RedisError:
        pass
    finally:
        client.close()
    say(f"  policy   not advertised in Redis after {timeout_s:.0f} s: runs are checked at their start instead")


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
        # The service answers from the process the stack started, or from its child: the trainer
        # with HALO_TRAINER_LEARNER_RANKS answers from rank 0, a child of the launcher it recorded.
        if found.pid:
            mine = next((p for p in ours if p.pid in (found.pid, parent_of(found.pid))), None)
        else:
            mine = ours[0] if ours else None
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
    record = spawn(spec.name, [sys.executable, "-m", spec.module], log_path, env, spec.base_url)
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
    with locked(settings, say):
        state = load_state(settings)
        if state is None:
            say("no local stack recorded")
            return
        # Reverse start order: the trainer before what it calls, Redis last.
        waits = {spec.name: max(timeout_s, spec.stop_timeout_s) for spec in service_specs()}
        for record in reversed(state.processes):
            if not same_process(record):
                say(
                    f"  {record.service:<8} pid {record.pid} gone (exited, or the pid is another program's now): left alone"
                )
                continue
            stop_group(record.pid, waits.get(record.service, timeout_s))
            say(f"  {record.service:<8} stopped (pid {record.pid})")
        state_path(settings).unlink(missing_ok=True)


# -- status --------------------------------------------------------------------------------------------
def status() -> list[dict]:
    """Liveness and readiness of each service (and Redis), whoever started them."""
    settings = HaloSettings()
    state = load_state(settings)
    redis_url = state.redis_url if state else planned_url(settings)
    rows = [{"service": "redis", "url": redis_url, "alive": redis_reachable(redis_url), "ready": None}]
    for spec in service_specs():
        alive = probe(spec).alive
        ready = is_ready(spec.base_url, spec.ready_path) if alive else False
        rows.append({"service": spec.name, "url": spec.base_url, "alive": alive, "ready": ready})
    return rows
