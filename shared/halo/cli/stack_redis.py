"""The local stack's Redis: a redis-server of its own, unless ``HALO_REDIS_URL`` names one.

A Redis the stack did not start holds whatever else uses it: a trainer lists every run of its
database when it starts and resumes the interrupted ones, so two checkouts on one database handed
each other their runs (and a trainer of an older commit refused to start on a newer one's records).
So the stack uses the Redis ``HALO_REDIS_URL`` names only when that is set (environment or ``.env``)
and answers; otherwise it runs its own ``redis-server``: bound to loopback, its data (an append-only
file, so runs survive ``down`` and ``up`` as they did on a shared Redis) in
``<data_dir>/stack/redis/``, on a port recorded there (``port``): ``HALO_STACK_REDIS_PORT`` when set,
else one the kernel finds free at the first start. A Redis found on that port is used only when it
is that one (its working folder is this data folder's); a recorded port that another program took
meanwhile is replaced by a free one.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

import redis

from halo.cli.stack_probes import port_held, redis_reachable
from halo.cli.stack_processes import ProcessRecord, pid_alive, spawn
from halo.cli.stack_state import StackState, load_state
from halo.settings import HaloSettings


def redis_dir(settings: HaloSettings) -> Path:
    return settings.data_dir / "stack" / "redis"


def named_redis(settings: HaloSettings) -> str | None:
    """``HALO_REDIS_URL`` when the user set it (a default value is not a choice)."""
    return settings.redis_url if "redis_url" in settings.model_fields_set else None


def child_env(settings: HaloSettings | None = None) -> dict[str, str]:
    """The environment for a command that talks to this checkout's Redis outside the stack
    (``halo cluster``): ``HALO_REDIS_URL`` set to the running stack's when the user named none."""
    settings = settings or HaloSettings()
    state = load_state(settings)
    if named_redis(settings) or state is None:
        return dict(os.environ)
    return {**os.environ, "HALO_REDIS_URL": state.redis_url}


def own_url(port: int) -> str:
    return f"redis://127.0.0.1:{port}/0"


def recorded_port(settings: HaloSettings) -> int | None:
    try:
        return int((redis_dir(settings) / "port").read_text())
    except (OSError, ValueError):
        return None


def planned_url(settings: HaloSettings) -> str:
    """The Redis the next ``up`` would use, for ``status`` when no stack runs."""
    port = settings.stack_redis_port or recorded_port(settings)
    return named_redis(settings) or (own_url(port) if port else "(the stack's own, not started yet)")


def is_ours(url: str, folder: Path) -> bool:
    """Whether the Redis at ``url`` is the one whose data lives in ``folder``."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)
        try:
            served = client.config_get("dir").get("dir")
        finally:
            client.close()
    except redis.RedisError:
        return False
    served = served.decode() if isinstance(served, bytes) else served
    return served is not None and Path(served).resolve() == folder.resolve()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_redis(
    settings: HaloSettings, state: StackState, logs: Path, say: Callable[[str], None]
) -> tuple[str, ProcessRecord | None]:
    """The Redis the stack's services use, and the process when this call started it."""
    if any(p.service != "redis" for p in state.processes) and redis_reachable(state.redis_url):
        # Services this stack started earlier run with that Redis: later ones join them there.
        return state.redis_url, None
    named = named_redis(settings)
    if named and redis_reachable(named):
        return named, None
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(f"Redis is not reachable at {settings.redis_url} and redis-server is not installed")
    folder = redis_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    chosen = settings.stack_redis_port is not None
    port = settings.stack_redis_port or recorded_port(settings) or _free_port()
    url = own_url(port)
    if is_ours(url, folder):
        return url, None
    if port_held(url):
        if chosen:
            raise RuntimeError(
                f"port {port} (HALO_STACK_REDIS_PORT) is held by another program, not by this stack's "
                f"redis-server (data in {folder}); give the stack another port or unset it"
            )
        port = _free_port()
        url = own_url(port)
    if state.live("redis"):
        raise RuntimeError(f"the stack's redis-server (pid {state.live('redis')[0].pid}) does not answer on {url}")
    why = f"Redis not reachable at {named}" if named else "the stack's own Redis"
    say(f"{why}; starting redis-server on port {port} (data in {folder})")
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder.resolve())]
    argv += ["--appendonly", "yes", "--save", ""]
    record = spawn("redis", argv, logs / "redis.log", None, url)
    deadline = time.monotonic() + 15
    while not redis_reachable(url):
        if not pid_alive(record.pid) or time.monotonic() > deadline:
            raise RuntimeError(f"redis-server did not start; see {logs / 'redis.log'}")
        time.sleep(0.1)
    (folder / "port").write_text(f"{port}\n")
    return url, record
