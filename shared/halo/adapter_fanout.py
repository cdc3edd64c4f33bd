"""Adapter versions on every policy replica: a version is current only when every live replica
lists it in ``/v1/models``.

The failure this prevents is the quiet one: an adapter that reaches some replicas and not others,
so part of the rollouts sample the base model (or an old version) for as long as nobody looks.
So ``publish`` loads on every live replica at once, then asks each for its ``/v1/models``; the
version becomes current (``<prefix>current``) only when none is missing, and the result names the
replicas that miss it and why. A replica that dies during the publish drops out of "every live
replica" by its heartbeat, not by a guess.

A replica that starts late or restarts calls ``join``: it loads the live versions (those published
and not retired, ``<prefix>versions``) before it registers, so no job is routed to a replica that
lacks the version it asks for. ``max_loras`` is checked against the versions kept: a publish that
would make a replica hold more adapters than it can is refused with the numbers, not left to fail
on a replica later.
"""

from __future__ import annotations

import asyncio
import logging
import time

from halo.policy_replicas import SERVICE, ReplicaPool, ReplicaRegistry, _s
from halo.schemas.cluster import FanoutResult, ReplicaRecord
from halo.transport import CallError, NotFound, ServiceRejected

logger = logging.getLogger("halo.adapter_fanout")


class TooManyVersions(ServiceRejected):
    """Keeping one more version would exceed a replica's ``max_loras``."""


class AdapterFanout:
    def __init__(self, pool: ReplicaPool) -> None:
        self.pool = pool
        self.registry: ReplicaRegistry = pool.registry

    @property
    def _versions_key(self) -> str:
        return f"{self.registry.prefix}versions"

    async def versions(self) -> dict[str, str]:
        """The live versions: name -> adapter path, as every replica must serve them."""
        return {_s(k): _s(v) for k, v in (await self.registry.redis.hgetall(self._versions_key)).items()}

    async def current(self) -> str | None:
        raw = await self.registry.redis.get(f"{self.registry.prefix}current")
        return _s(raw) if raw is not None else None

    async def served(self, replica: ReplicaRecord) -> set[str]:
        response = await self.pool.transport(replica.url).request("GET", "/v1/models", timeout_s=10.0)
        return {str(m["id"]) for m in response.json().get("data", [])}

    async def _load(self, replica: ReplicaRecord, name: str, path: str) -> float:
        started = time.perf_counter()
        try:
            await self.pool.transport(replica.url).request(
                "POST", "/v1/load_lora_adapter", json={"lora_name": name, "lora_path": path}, retry=False
            )
        except ServiceRejected:
            # Already loaded (a retried publish, a replica that caught up) is fine; the check after says.
            if name not in await self.served(replica):
                raise
        return time.perf_counter() - started

    async def publish(self, name: str, path: str) -> FanoutResult:
        """Load ``name`` on every live replica; current only when every live replica lists it."""
        started = time.perf_counter()
        replicas = await self.registry.live()
        if not replicas:
            return FanoutResult(name=name, current=False, seconds=0.0, missing={"*": "no live policy replica"})
        kept = set(await self.versions()) | {name}
        tightest = min(replicas, key=lambda r: r.max_loras)
        if len(kept) > tightest.max_loras:
            raise TooManyVersions(
                SERVICE,
                f"keeping {len(kept)} adapter versions but replica {tightest.replica_id} serves at most "
                f"{tightest.max_loras} (max_loras): retire versions first or raise max_loras",
            )
        loads = await asyncio.gather(*(self._load(r, name, path) for r in replicas), return_exceptions=True)
        per_replica, missing = {}, {}
        for replica, outcome in zip(replicas, loads, strict=True):
            if isinstance(outcome, BaseException):
                missing[replica.replica_id] = f"load failed: {outcome}"
            else:
                per_replica[replica.replica_id] = outcome
        listed = await asyncio.gather(*(self.served(r) for r in replicas), return_exceptions=True)
        for replica, served in zip(replicas, listed, strict=True):
            if isinstance(served, BaseException):
                missing.setdefault(replica.replica_id, f"/v1/models failed: {served}")
            elif name not in served:
                missing.setdefault(replica.replica_id, "loaded, but not listed in /v1/models")
        # A replica that died meanwhile is no longer one that must serve the version.
        alive = {r.replica_id for r in await self.registry.live()}
        missing = {rid: why for rid, why in missing.items() if rid in alive}
        current = not missing
        if current:
            async with self.registry.redis.pipeline(transaction=True) as pipe:
                pipe.hset(self._versions_key, name, path)
                pipe.set(f"{self.registry.prefix}current", name)
                await pipe.execute()
        else:
            await self.registry.count("fanout_incomplete")
            logger.error("adapter %s is not current: missing on %s", name, missing)
        return FanoutResult(
            name=name,
            current=current,
            seconds=time.perf_counter() - started,
            per_replica_s=per_replica,
            missing=missing,
        )

    async def retire(self, name: str) -> None:
        """A version no rollout may use any more: out of the live set first, then unloaded everywhere."""
        await self.registry.redis.hdel(self._versions_key, name)
        for replica in await self.registry.live():
            try:
                await self.pool.transport(replica.url).request(
                    "POST", "/v1/unload_lora_adapter", json={"lora_name": name}, retry=False
                )
            except NotFound:
                pass  # never loaded there: nothing to unload
            except CallError as exc:  # a dead replica loses its adapters anyway
                logger.warning("unloading %s on %s failed: %s", name, replica.replica_id, exc)

    async def forget(self, *names: str) -> None:
        """Out of the live set without unloading: a replica that joins later does not load them
        (a full-weights sync: those adapters were trained on weights a restarted replica lacks)."""
        if names:
            await self.registry.redis.hdel(self._versions_key, *names)

    async def join(self, record: ReplicaRecord) -> list[str]:
        """Register a replica that starts late or restarted, after loading every live version it lacks
        (returns their names). Its heartbeat afterwards is ``registry.register(record)``."""
        versions = await self.versions()
        if len(versions) > record.max_loras:
            raise TooManyVersions(
                SERVICE,
                f"{len(versions)} live adapter versions but replica {record.replica_id} serves at most {record.max_loras}",
            )
        lacking = sorted(set(versions) - await self.served(record))
        for name in lacking:
            await self._load(record, name, versions[name])
        await self.registry.register(record.model_copy(update={"adapters": sorted(versions)}))
        return lacking
