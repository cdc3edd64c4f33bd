"""The trainer's env and reward on a cluster (``HALO_TRAINER_CLUSTER_NODES``): any running node's.

On one box the trainer lists and probes a run's tasks on the env at ``env_url`` and counts env and
reward in its readiness. On a cluster the envs run on the rollout nodes, at ports a node's actor
chooses again when it restarts, so a fixed URL names one node and goes stale with it: new runs were
refused once that node restarted, until the trainer did. Here each call reads the running nodes
from the supervisor's status and takes the first that answers (``halo.cluster_nodes``).
"""

from __future__ import annotations

import httpx
import redis.asyncio as aioredis

from halo.clients import EnvClient
from halo.cluster_nodes import on_any_node
from halo.schemas.tasks import TaskReachability
from halo.transport import ServiceUnavailable


class NodeTaskProbe:
    """What ``choose_tasks`` asks of an env (``reachability``, ``domains``), asked of a running node's env."""

    def __init__(self, redis: aioredis.Redis, prefix: str, timeout_s: float) -> None:
        self.redis, self.prefix, self.timeout_s = redis, prefix, timeout_s

    async def reachability(self, domain: str, timeout_s: float = 3.0) -> list[TaskReachability]:
        async def probe(url: str) -> list[TaskReachability]:
            async with EnvClient(url, timeout_s=self.timeout_s, max_retries=0) as env:
                return await env.reachability(domain, timeout_s)

        return await on_any_node(self.redis, self.prefix, "env", probe)

    async def domains(self) -> list[str]:
        async def ask(url: str) -> list[str]:
            async with EnvClient(url, timeout_s=self.timeout_s, max_retries=0) as env:
                return await env.domains()

        return await on_any_node(self.redis, self.prefix, "env", ask)


def node_ready_check(redis: aioredis.Redis, prefix: str, service: str, client: httpx.AsyncClient):
    """A readiness check that passes while any running node's ``service`` answers ``/ready``."""

    async def ready(url: str) -> None:
        try:
            response = await client.get(f"{url}/ready")
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(service, f"{type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise ServiceUnavailable(service, f"/ready answered {response.status_code}")

    async def check() -> None:
        await on_any_node(redis, prefix, service, ready)

    return check
