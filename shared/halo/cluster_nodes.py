"""The rollout nodes' service URLs, as the cluster's supervisor last published them.

The supervisor writes the cluster's status (``ClusterStatus``) under ``<prefix>status`` on every
tick; a node's env, reward and sites listen on that node's address at ports its actor chose, and a
node whose actor restarts comes back on other ports. So a process on the head that needs *some*
env (the trainer listing and probing a domain's tasks, its readiness check) reads the running
nodes from that record each time, instead of an address fixed when it started, and tries them in
turn: one node dead or restarting does not stop it while another runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as aioredis
from pydantic import ValidationError
from redis.exceptions import RedisError

from halo.schemas.cluster import ClusterStatus
from halo.transport import ServiceUnavailable

T = TypeVar("T")


def status_key(prefix: str) -> str:
    """Where the supervisor publishes the cluster's status (one home for the key)."""
    return f"{prefix}status"


async def read_status(redis: aioredis.Redis, prefix: str) -> ClusterStatus | None:
    raw = await redis.get(status_key(prefix))
    return ClusterStatus.model_validate_json(raw) if raw else None


async def running_urls(redis: aioredis.Redis, prefix: str, service: str) -> list[str]:
    """``service``'s URL on each running rollout node, in the status's order (empty: none runs)."""
    status = await read_status(redis, prefix)
    if status is None:
        return []
    return [n.urls[service] for n in status.nodes if n.state == "running" and service in n.urls]


async def on_any_node(redis: aioredis.Redis, prefix: str, service: str, call: Callable[[str], Awaitable[T]]) -> T:
    """``call(url)`` on the first running node whose ``service`` answers it; a node that does not
    answer (``ServiceUnavailable``) is passed over for the next. An answer that is an error (a 4xx
    from a node that did answer) is the call's answer and is raised as it is.

    Raises ``ServiceUnavailable`` naming each node tried and why, or saying that no node runs."""
    try:
        urls = await running_urls(redis, prefix, service)
    except (RedisError, ValidationError) as exc:  # Redis away, or a record this version cannot read
        raise ServiceUnavailable(
            service, f"cannot read the cluster status under {status_key(prefix)!r}: {exc}"
        ) from exc
    if not urls:
        raise ServiceUnavailable(
            service,
            f"no rollout node is running (the cluster status under {status_key(prefix)!r} lists none; "
            "see `halo cluster status`)",
        )
    failures = []
    for url in urls:
        try:
            return await call(url)
        except ServiceUnavailable as exc:
            failures.append(f"{url}: {exc}")
    raise ServiceUnavailable(service, f"no running rollout node's {service} answered: " + "; ".join(failures))
