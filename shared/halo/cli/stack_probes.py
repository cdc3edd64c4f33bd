"""What answers on a service's port: liveness (``/health``), readiness (``/ready``), whether the port
is held at all, and whether Redis answers.

Whether a service already runs is decided by liveness and by who holds its port, never by readiness
(``/ready`` fails whenever a dependency does, or is slow while the machine is loaded).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx
import redis

if TYPE_CHECKING:
    from halo.cli.stack import ServiceSpec

# Generous on purpose: on a loaded 2-core machine a healthy trainer has been seen taking seconds to
# answer, and a probe that gives up too early is what once started a second trainer.
HEALTH_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 15.0


@dataclass
class Probe:
    """What answers on a service's port."""

    alive: bool  # /health answered 200 as this service
    port_held: bool
    pid: int | None = None  # the pid /health reported
    other: str | None = None  # what answers instead, when not this service


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
