"""The head's processes: the Ray head (GCS, its raylet) and the supervisor, started by
``halo cluster up`` and stopped by ``halo cluster down``, each in a process group of its own and
recorded in ``<data_dir>/cluster/head.json`` so that ``down`` stops exactly those.

Never ``ray stop``: it kills every Ray process of the machine, other clusters' and other
namespaces' included (the process table is shared).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import redis

from halo.cli.stack_probes import redis_reachable
from halo.cli.stack_processes import ProcessRecord, same_process, spawn, stop_group
from halo.schemas.cluster import ClusterStatus
from halo.settings.cluster import ClusterSettings
from halo.settings.store import StoreSettings
from halo.store import store_env
from halo_cluster.ray_auth import auth_env, ensure_token
from halo_cluster.supervisor import status_key

HEAD_RESOURCE = "halo_head"


class HeadError(RuntimeError):
    """A reason ``up`` cannot go on, in words for the operator."""


def cluster_dir(settings: ClusterSettings) -> Path:
    return settings.data_dir / "cluster"


def state_path(settings: ClusterSettings) -> Path:
    return cluster_dir(settings) / "head.json"


def load_records(settings: ClusterSettings) -> list[ProcessRecord]:
    path = state_path(settings)
    if not path.exists():
        return []
    return [ProcessRecord(**row) for row in json.loads(path.read_text())]


def ray_address(settings: ClusterSettings) -> str:
    return f"{settings.head_ip}:{settings.ray_port}"


def ray_command() -> str:
    return str(Path(sys.executable).parent / "ray")


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((host, port)) == 0


def _tail(record: ProcessRecord, lines: int = 8) -> str:
    try:
        return "\n".join(Path(record.log or "").read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def up(settings: ClusterSettings, say: Callable[[str], None], timeout_s: float = 120.0) -> str:
    """Start the Ray head and the supervisor; returns the join command for the other nodes."""
    if any(same_process(r) for r in load_records(settings)):
        raise HeadError("the cluster head already runs here (`halo cluster status`, `halo cluster down`)")
    if not redis_reachable(settings.redis_url):
        raise HeadError(
            f"Redis is not reachable at {settings.redis_url}: start it first (`halo stack up --service trainer` "
            "starts Redis and the trainer) or set HALO_REDIS_URL"
        )
    if _port_open(settings.head_ip, settings.ray_port):
        raise HeadError(f"{ray_address(settings)} is already taken; set HALO_CLUSTER_RAY_PORT to a free port")
    store = StoreSettings()
    token = ensure_token(settings.data_dir)
    try:
        store_env(store, token)
    except ValueError as exc:
        raise HeadError(str(exc)) from None
    if store.backend == "http" and _port_open(store.host, store.port):
        raise HeadError(f"{store.host}:{store.port} is already taken; set HALO_STORE_PORT to a free port")
    logs = cluster_dir(settings) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **auth_env(token)}
    head_argv = [
        ray_command(),
        "start",
        "--head",
        "--block",
        f"--port={settings.ray_port}",
        f"--node-ip-address={settings.head_ip}",
        f"--resources={json.dumps({HEAD_RESOURCE: 1})}",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    records = [spawn("ray-head", head_argv, logs / "ray-head.log", env, ray_address(settings))]
    _save(settings, records)
    say(f"Ray head starting at {ray_address(settings)}")
    deadline = time.monotonic() + timeout_s
    while not _port_open(settings.head_ip, settings.ray_port):
        if not same_process(records[0]) or time.monotonic() > deadline:
            down(settings, say=lambda _: None)
            raise HeadError(f"the Ray head did not start:\n{_tail(records[0])}")
        time.sleep(0.5)
    if store.backend == "http":
        _serve_data(settings, store, records, {**env, "HALO_STORE_TOKEN": token}, logs, deadline, say)
    started = time.time()
    argv = [sys.executable, "-m", "halo_cluster", "supervise"]
    records.append(spawn("supervisor", argv, logs / "supervisor.log", env, ""))
    _save(settings, records)
    while (status := read_status(settings)) is None or status.updated_at < started:
        if not same_process(records[-1]) or time.monotonic() > deadline:
            down(settings, say=lambda _: None)
            raise HeadError(f"the supervisor did not report:\n{_tail(records[-1])}")
        time.sleep(0.5)
    return (
        f"RAY_AUTH_MODE=token RAY_AUTH_TOKEN=<the token in {cluster_dir(settings) / 'ray_token'}> "
        f"ray start --address {ray_address(settings)} --resources '{{\"rollout_node\": 1}}'"
    )


def _serve_data(
    settings: ClusterSettings,
    store: StoreSettings,
    records: list[ProcessRecord],
    env: dict[str, str],
    logs: Path,
    deadline: float,
    say: Callable[[str], None],
) -> None:
    """The head's data server, for nodes without the head's folder (HALO_STORE_BACKEND=http)."""
    argv = [sys.executable, "-m", "halo.store", "serve"]
    records.append(spawn("data-server", argv, logs / "data-server.log", env, f"{store.host}:{store.port}"))
    _save(settings, records)
    while not _port_open(store.host, store.port):
        if not same_process(records[-1]) or time.monotonic() > deadline:
            down(settings, say=lambda _: None)
            raise HeadError(f"the data server did not start:\n{_tail(records[-1])}")
        time.sleep(0.5)
    say(f"data server at {store.host}:{store.port} (nodes reach it as {store.head_url})")


def _save(settings: ClusterSettings, records: list[ProcessRecord]) -> None:
    state_path(settings).write_text(json.dumps([asdict(r) for r in records], indent=1))


def down(settings: ClusterSettings, say: Callable[[str], None]) -> None:
    """Stop the supervisor first (it stops the rollout nodes it placed), then the Ray head."""
    records = load_records(settings)
    for record in sorted(records, key=lambda r: r.service != "supervisor"):
        if same_process(record):
            # The supervisor stops its rollout nodes first; the Ray head's processes get less.
            stop_group(record.pid, timeout_s=30.0 if record.service == "supervisor" else 10.0)
            say(f"stopped {record.service} (pid {record.pid})")
    state_path(settings).unlink(missing_ok=True)
    if not records:
        say("no cluster head runs here")


def read_status(settings: ClusterSettings) -> ClusterStatus | None:
    raw = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=2).get(status_key(settings))
    return ClusterStatus.model_validate_json(raw) if raw else None
