"""Several policy replicas (vLLM servers) behind one policy: who is alive, which one a job uses,
and what happens when one dies.

- **Registry with heartbeats.** A replica is live while its record ``<prefix>replica:<id>`` exists;
  the record expires ``ttl_s`` after its last heartbeat, so a replica that dies (node lost, SIGKILL)
  drops out without anyone noticing it by hand.
- **Least-loaded, then sticky.** A job's first request goes to the live replica with the fewest
  requests in flight (counted in Redis, so across every worker process); the job then stays on it,
  because a job's forks share one prompt prefix and the replica's prefix cache holds it.
- **Failover.** A replica that does not answer, or answers 404 for a version the registry says is
  live (it restarted and has not caught up), is taken out of the registry and the request goes to
  another live replica; the caller sees an error only when none is left. It comes back with its
  next heartbeat, after it has loaded the live versions (``halo.adapter_fanout``).
- **Which adapter answered.** Every sample returns the name the server says answered; an answer
  from another version than asked is an infrastructure failure (``WrongAdapter``), counted in
  Redis and shown, never trained on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from halo.policy_errors import WrongAdapter
from halo.schemas.cluster import ReplicaRecord
from halo.transport import CallError, NotFound, ServiceUnavailable, Transport, key_headers
from halo.vllm_chat import post_chat

logger = logging.getLogger("halo.policy_replicas")
SERVICE = "policy replica"
RUN_COUNTERS_TTL_S = 30 * 24 * 3600  # a run's counters outlive any run; a forgotten run's go


class NoReplica(ServiceUnavailable):
    """No live policy replica: none registered, or every one failed over."""


@dataclass(frozen=True)
class Sample:
    body: dict[str, Any]
    replica_id: str
    adapter: str  # the name the server says answered (its ``model`` field)
    seconds: float


# KEYS: the load hash, the job's sticky key; ARGV: sticky TTL, then the live candidates' ids.
_PICK = """
local sticky = redis.call('GET', KEYS[2])
local best, least = nil, nil
for i = 2, #ARGV do
  if ARGV[i] == sticky then best = sticky; break end
  local load = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if least == nil or load < least then best, least = ARGV[i], load end
end
redis.call('HINCRBY', KEYS[1], best, 1)
redis.call('SET', KEYS[2], best, 'EX', ARGV[1])
return best
"""


class ReplicaRegistry:
    """The live replicas of one policy, their load, and the job -> replica stickiness (Redis)."""

    def __init__(self, redis: aioredis.Redis, prefix: str, *, ttl_s: float = 10.0, sticky_ttl_s: int = 3600) -> None:
        self.redis, self.prefix, self.ttl_s, self.sticky_ttl_s = redis, prefix, ttl_s, sticky_ttl_s

    def _key(self, replica_id: str) -> str:
        return f"{self.prefix}replica:{replica_id}"

    # -- membership ------------------------------------------------------------------------------
    async def register(self, record: ReplicaRecord) -> None:
        """Register or refresh (a heartbeat is the same call)."""
        record = record.model_copy(update={"registered_at": record.registered_at or time.time()})
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self._key(record.replica_id), record.model_dump_json(), px=int(self.ttl_s * 1000))
            pipe.sadd(f"{self.prefix}replicas", record.replica_id)
            await pipe.execute()

    async def heartbeat(self, record: ReplicaRecord, every_s: float, served: Callable[[], Any]) -> None:
        """Refresh ``record`` every ``every_s`` with what the replica serves (``await served()``, its
        ``/v1/models`` ids) until cancelled; the replica's own supervisor runs this after ``join``.
        A replica that cannot answer is not refreshed, so it expires instead of attracting jobs."""
        while True:
            try:
                adapters = sorted(await served())
            except CallError as exc:
                logger.warning("replica %s did not answer its heartbeat check: %s", record.replica_id, exc)
            else:
                await self.register(record.model_copy(update={"adapters": adapters}))
            await asyncio.sleep(every_s)

    async def deregister(self, replica_id: str) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(replica_id))
            # Its load entry stays: requests still in flight there subtract themselves when they end.
            pipe.srem(f"{self.prefix}replicas", replica_id)
            await pipe.execute()

    async def live(self) -> list[ReplicaRecord]:
        """The replicas whose heartbeat has not expired, sorted by id; expired ones are forgotten."""
        ids = sorted(_s(i) for i in await self.redis.smembers(f"{self.prefix}replicas"))
        if not ids:
            return []
        raws = await self.redis.mget([self._key(i) for i in ids])
        gone = [i for i, raw in zip(ids, raws, strict=True) if raw is None]
        if gone:
            await self.redis.srem(f"{self.prefix}replicas", *gone)
        return [ReplicaRecord.model_validate_json(raw) for raw in raws if raw is not None]

    # -- which replica a job uses -----------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def using(self, job_id: str, exclude: frozenset[str] = frozenset()) -> AsyncIterator[ReplicaRecord]:
        """The job's replica, counted in flight while the ``async with`` lasts: the one the job
        started on while that one is live, else the least loaded. Choosing and counting are one
        Redis script, so concurrent first requests (of any process) spread instead of all seeing
        the same idle replica."""
        live = [r for r in await self.live() if r.replica_id not in exclude]
        if not live:
            raise NoReplica(SERVICE, "no live policy replica (none registered, or every one failed)")
        keys = [f"{self.prefix}load", f"{self.prefix}sticky:{job_id}"]
        chosen = _s(await self.redis.eval(_PICK, 2, *keys, self.sticky_ttl_s, *(r.replica_id for r in live)))
        try:
            yield next(r for r in live if r.replica_id == chosen)
        finally:
            await self.redis.hincrby(f"{self.prefix}load", chosen, -1)

    async def count(self, what: str, run_id: str | None = None) -> int:
        """Add one to an infrastructure-failure counter (``wrong_adapter``, ``failover``...), and to
        the run's own when the request was a run's: the run shows its counters, not the cluster's."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hincrby(f"{self.prefix}infra", what, 1)
            if run_id is not None:
                pipe.hincrby(self._run_infra(run_id), what, 1)
                pipe.expire(self._run_infra(run_id), RUN_COUNTERS_TTL_S)
            total, *_ = await pipe.execute()
        return int(total)

    async def counters(self, run_id: str | None = None) -> dict[str, int]:
        """The cluster's infrastructure-failure counters, or one run's."""
        key = f"{self.prefix}infra" if run_id is None else self._run_infra(run_id)
        return {_s(k): int(v) for k, v in (await self.redis.hgetall(key)).items()}

    def _run_infra(self, run_id: str) -> str:
        return f"{self.prefix}infra:run:{run_id}"


class ReplicaPool:
    """Samples through the registry: sticky pick, failover, and the answered-adapter check."""

    def __init__(
        self,
        registry: ReplicaRegistry,
        *,
        transport: Callable[[str], Transport] | None = None,
        max_failovers: int = 3,
        timeout_s: float = 120.0,
        api_key: str = "",
    ) -> None:
        """``api_key``: the replicas' (``HALO_POLICY_API_KEY`` on each), sent with every request. No
        retries inside a request: a replica that does not answer is failed over instead."""
        self.registry, self.max_failovers = registry, max_failovers
        headers = key_headers(api_key)
        self._make = transport or (
            lambda url: Transport(SERVICE, url, max_retries=0, timeout_s=timeout_s, headers=headers)
        )
        self._transports: dict[str, Transport] = {}

    def transport(self, url: str) -> Transport:
        if url not in self._transports:
            self._transports[url] = self._make(url)
        return self._transports[url]

    async def aclose(self) -> None:
        for transport in self._transports.values():
            await transport.aclose()
        self._transports.clear()

    async def chat(self, job_id: str, body: dict[str, Any], run_id: str | None = None) -> Sample:
        """POST ``/v1/chat/completions`` for ``job_id`` with ``body["model"]`` the version asked;
        failures are counted for ``run_id`` too."""
        asked = str(body["model"])
        tried: set[str] = set()
        while True:
            started = time.perf_counter()
            async with self.registry.using(job_id, exclude=frozenset(tried)) as replica:
                try:
                    response = await post_chat(self.transport(replica.url), body, retry=False)
                except (ServiceUnavailable, NotFound) as exc:
                    failure: CallError | None = exc
                else:
                    failure = None
            if failure is None:
                break
            # Dead, or restarted without the live versions yet: out until its next heartbeat.
            tried.add(replica.replica_id)
            await self.registry.deregister(replica.replica_id)
            await self.registry.count(
                "failover_not_found" if isinstance(failure, NotFound) else "failover_down", run_id
            )
            logger.warning("replica %s failed for job %s (%s); failing over", replica.replica_id, job_id, failure)
            if len(tried) > self.max_failovers:
                raise NoReplica(SERVICE, f"{len(tried)} replicas failed for job {job_id}: {failure}") from failure
        answer = response.json()
        answered = str(answer.get("model", ""))
        if answered != asked:
            await self.registry.count("wrong_adapter", run_id)
            raise WrongAdapter(SERVICE, f"replica {replica.replica_id} answered from {answered!r}, asked {asked!r}")
        return Sample(answer, replica.replica_id, answered, time.perf_counter() - started)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
