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

A replica whose machine does not see the head's data folder (``fetches_adapters``: the store is
``http``) cannot open the head's path. For it the fan-out sends the folder's store key to the
replica's sidecar through Redis (``<prefix>loads:<id>``, a ``AdapterLoadRequest``); the sidecar
fetches the folder with ``halo.store`` into its own data folder and loads that local copy
(``serve_loads``), then answers. The sidecar's own ``join`` fetches the same way. The key is the
path relative to the head's data folder (``data_root``), kept per version in ``<prefix>version_keys``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from halo.policy_replicas import SERVICE, ReplicaPool, ReplicaRegistry, _s
from halo.schemas.cluster import AdapterLoadReply, AdapterLoadRequest, FanoutResult, ReplicaRecord
from halo.store.base import StoreError, clean
from halo.transport import CallError, NotFound, ServiceRejected, ServiceUnavailable

logger = logging.getLogger("halo.adapter_fanout")


class TooManyVersions(ServiceRejected):
    """Keeping one more version would exceed a replica's ``max_loras``."""


class AdapterFanout:
    """``data_root``: the head's data folder (the publisher's side), to name an adapter by its store
    key; ``fetch``: store key -> local folder (a fetching replica's sidecar), to load local copies."""

    def __init__(
        self,
        pool: ReplicaPool,
        *,
        data_root: Path | None = None,
        fetch: Callable[[str], Awaitable[Path]] | None = None,
        load_timeout_s: float = 300.0,
    ) -> None:
        self.pool = pool
        self.registry: ReplicaRegistry = pool.registry
        self.data_root, self.fetch, self.load_timeout_s = data_root, fetch, load_timeout_s

    @property
    def _versions_key(self) -> str:
        return f"{self.registry.prefix}versions"

    @property
    def _keys_key(self) -> str:
        return f"{self.registry.prefix}version_keys"

    def store_key(self, path: str) -> str:
        """``path`` relative to the head's data folder; ``ServiceRejected`` saying why when it is not."""
        if self.data_root is None:
            raise ServiceRejected(SERVICE, f"{path}: no data folder given to name it in the store (data_root)")
        try:
            return clean(Path(path).resolve().relative_to(Path(self.data_root).resolve()).as_posix())
        except ValueError:
            raise ServiceRejected(
                SERVICE,
                f"the adapter folder {path} is outside the head's data folder {self.data_root}, so a replica "
                "without the shared filesystem cannot fetch it",
            ) from None

    async def versions(self) -> dict[str, str]:
        """The live versions: name -> adapter path, as every replica must serve them."""
        return {_s(k): _s(v) for k, v in (await self.registry.redis.hgetall(self._versions_key)).items()}

    async def current(self) -> str | None:
        raw = await self.registry.redis.get(f"{self.registry.prefix}current")
        return _s(raw) if raw is not None else None

    async def served(self, replica: ReplicaRecord) -> set[str]:
        response = await self.pool.transport(replica.url).request("GET", "/v1/models", timeout_s=10.0)
        return {str(m["id"]) for m in response.json().get("data", [])}

    async def _load(self, replica: ReplicaRecord, name: str, path: str, key: str | None = None) -> float:
        started = time.perf_counter()
        if replica.fetches_adapters:
            if key is None:
                raise ServiceRejected(
                    SERVICE, f"{name} has no store key, so replica {replica.replica_id} cannot fetch it"
                )
            if self.fetch is None:  # the publisher: the replica's sidecar fetches and loads
                await self._ask_sidecar(replica, name, key)
                return time.perf_counter() - started
            try:  # the sidecar itself: load the local copy
                path = str(await self.fetch(key))
            except (StoreError, OSError, ValueError) as exc:
                raise ServiceUnavailable(
                    SERVICE, f"replica {replica.replica_id} could not fetch {name} ({key}) from the store: {exc}"
                ) from None
        try:
            await self.pool.transport(replica.url).request(
                "POST", "/v1/load_lora_adapter", json={"lora_name": name, "lora_path": path}, retry=False
            )
        except ServiceRejected:
            # Already loaded (a retried publish, a replica that caught up) is fine; the check after says.
            if name not in await self.served(replica):
                raise
        return time.perf_counter() - started

    def _loads_key(self, replica_id: str) -> str:
        return f"{self.registry.prefix}loads:{replica_id}"

    async def _ask_sidecar(self, replica: ReplicaRecord, name: str, key: str) -> None:
        redis = self.registry.redis
        request = AdapterLoadRequest(
            request_id=uuid.uuid4().hex, name=name, key=key, deadline=time.time() + self.load_timeout_s
        )
        queue, reply_key = self._loads_key(replica.replica_id), f"{self.registry.prefix}loaded:{request.request_id}"
        async with redis.pipeline(transaction=True) as pipe:
            pipe.rpush(queue, request.model_dump_json())
            pipe.expire(queue, int(self.load_timeout_s) + 60)  # a dead sidecar's queue does not stay
            await pipe.execute()
        answer = await redis.blpop([reply_key], timeout=self.load_timeout_s)
        if answer is None:
            raise ServiceUnavailable(
                SERVICE,
                f"the sidecar of replica {replica.replica_id} did not fetch and load {name} ({key}) within "
                f"{self.load_timeout_s:.0f} s",
            )
        reply = AdapterLoadReply.model_validate_json(answer[1])
        if reply.error:
            raise ServiceRejected(
                SERVICE, f"replica {replica.replica_id} could not load {name} from the store: {reply.error}"
            )

    async def serve_loads(self, record: ReplicaRecord, stop: Callable[[], bool], poll_s: float = 1.0) -> None:
        """A fetching replica's sidecar: fetch and load what the fan-out asks, until ``stop()``."""
        redis, queue = self.registry.redis, self._loads_key(record.replica_id)
        while not stop():
            item = await redis.blpop([queue], timeout=poll_s)
            if item is None:
                continue
            request = AdapterLoadRequest.model_validate_json(item[1])
            if request.deadline < time.time():
                continue  # nobody waits for it any more (asked while this sidecar was down)
            started, error = time.perf_counter(), ""
            try:
                await self._load(record, request.name, "", request.key)
            except CallError as exc:
                error = f"{type(exc).__name__}: {exc}"
                logger.warning("replica %s could not load %s: %s", record.replica_id, request.name, error)
            reply = AdapterLoadReply(request_id=request.request_id, error=error, seconds=time.perf_counter() - started)
            reply_key = f"{self.registry.prefix}loaded:{request.request_id}"
            async with redis.pipeline(transaction=True) as pipe:
                pipe.rpush(reply_key, reply.model_dump_json())
                pipe.expire(reply_key, 60)
                await pipe.execute()

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
        key, key_problem = None, None
        try:
            key = self.store_key(path)
        except ServiceRejected as exc:
            key_problem = exc  # only a replica that fetches needs the key

        async def load(replica: ReplicaRecord) -> float:
            if replica.fetches_adapters and key_problem is not None:
                raise key_problem
            return await self._load(replica, name, path, key)

        loads = await asyncio.gather(*(load(r) for r in replicas), return_exceptions=True)
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
                if key is not None:
                    pipe.hset(self._keys_key, name, key)
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
        await self.registry.redis.hdel(self._keys_key, name)
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
            await self.registry.redis.hdel(self._keys_key, *names)

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
        keys = {_s(k): _s(v) for k, v in (await self.registry.redis.hgetall(self._keys_key)).items()}
        for name in lacking:
            await self._load(record, name, versions[name], keys.get(name))
        await self.registry.register(record.model_copy(update={"adapters": sorted(versions)}))
        return lacking
