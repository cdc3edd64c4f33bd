"""One policy served by several vLLM replicas, as the trainer's policy client.

``ReplicatedPolicyClient`` is a ``PolicyClient`` whose requests go through the replica registry
(``halo.policy_replicas``) and whose versions go through the fan-out (``halo.adapter_fanout``), so
the rollouts, the publisher and the run checks use it unchanged:

- a sample goes to its job's replica (the least loaded at the job's first request, then the same
  one, whose prefix cache holds the job's prompt) and fails over when that replica is dead or has
  lost the version; the result names the replica that answered;
- ``load_adapter`` loads a version on every live replica and returns only when every one lists it
  in ``/v1/models``. Otherwise it raises ``ServiceUnavailable`` naming the replicas that lack it, so
  the publisher waits and tries again and the run's current version stays the previous one;
- ``unload_adapter`` retires a version: out of the live set (a replica that joins later does not
  load it), then unloaded from every live replica;
- ``models()`` is what every live replica serves (the names a job may ask for on any of them);
  ``served_names()`` what any of them still holds (what a run's end must unload);
- full weights are reloaded in one server, so they are refused while more than one replica is
  live; with one, that replica is the server (and no adapter stays in the live set: a replica that
  restarts has the original weights, so the publisher must serve weights and adapter again).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from halo.adapter_fanout import AdapterFanout
from halo.policy_client import PolicyClient
from halo.policy_errors import EngineDead
from halo.policy_replicas import SERVICE, NoReplica, ReplicaPool, ReplicaRegistry
from halo.schemas.cluster import FanoutResult, ReplicaRecord
from halo.transport import CallError, ServiceFailed, ServiceRejected, ServiceUnavailable, Transport

logger = logging.getLogger("halo.policy_client")

# The parent's transport is never called here: every request goes to a replica's own.
UNUSED_URL = "http://policy-replicas.invalid"


class ReplicatedPolicyClient(PolicyClient):
    """Sampling and versions over the replicas registered under ``prefix`` in ``redis_url``."""

    replicated = True

    def __init__(
        self,
        redis_url: str,
        prefix: str,
        base_model: str,
        *,
        sticky_ttl_s: int = 3600,
        timeout_s: float = 120.0,
        data_root: Path | None = None,
        api_key: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(UNUSED_URL, base_model, timeout_s=timeout_s, **kwargs)
        self.prefix, self.timeout_s, self._api_key = prefix, timeout_s, api_key
        self._redis = aioredis.from_url(redis_url)
        self.registry = ReplicaRegistry(self._redis, prefix, sticky_ttl_s=sticky_ttl_s)
        # No retries inside a request: a replica that does not answer is failed over instead.
        self.pool = ReplicaPool(self.registry, timeout_s=timeout_s, api_key=api_key)
        self.fanout = AdapterFanout(self.pool, data_root=data_root)
        self.last_fanout: FanoutResult | None = None

    @property
    def base_url(self) -> str:
        return f"the policy replicas registered under {self.prefix!r}"

    async def aclose(self) -> None:
        await self.pool.aclose()
        await self._redis.aclose()
        await super().aclose()

    async def live(self) -> list[ReplicaRecord]:
        """The live replicas; ``NoReplica`` (a ``ServiceUnavailable``: callers wait) when none is."""
        live = await self.registry.live()
        if not live:
            raise NoReplica(
                SERVICE,
                f"no policy replica is registered under {self.prefix!r}: start `halo cluster replica` beside "
                "each vLLM, or unset HALO_TRAINER_POLICY_REPLICAS to sample from HALO_TRAINER_POLICY_URL",
            )
        return live

    async def replica_count(self) -> int:
        return len(await self.registry.live())

    async def infra_counters(self, run_id: str) -> dict[str, int]:
        return await self.registry.counters(run_id)

    # -- health and what is served ------------------------------------------------------------------
    async def health(self) -> None:
        """Fine while any live replica's engine answers; ``EngineDead`` when the ones that answer
        say their engine died, ``ServiceUnavailable`` when none answers."""
        live = await self.live()
        outcomes = await self._each(live, lambda t: t.request("GET", "/health", retry=False, timeout_s=10.0))
        errors = [o for o in outcomes if isinstance(o, CallError)]
        if len(errors) < len(outcomes):
            return
        if any(isinstance(e, ServiceFailed) and e.status == 503 for e in errors):
            raise EngineDead(SERVICE, f"every live policy replica's engine is dead (/health 503): {errors[0]}")
        raise ServiceUnavailable(SERVICE, f"no live policy replica answers /health: {errors[0]}")

    async def models(self) -> list[dict[str, Any]]:
        """The models every live replica lists (as the first of them describes them). A replica
        that does not answer is left out: it is failing over, and its heartbeat drops it."""
        listed = await self._listed()
        common = set.intersection(*({str(m["id"]) for m in models} for models in listed))
        return [m for m in listed[0] if str(m["id"]) in common]

    async def served_names(self) -> set[str]:
        listed = await self._listed()
        return {str(m["id"]) for models in listed for m in models} | set(await self.fanout.versions())

    async def _listed(self) -> list[list[dict[str, Any]]]:
        live = await self.live()
        outcomes = await self._each(live, lambda t: t.request("GET", "/v1/models", timeout_s=10.0))
        answers = [list(o.json().get("data", [])) for o in outcomes if not isinstance(o, CallError)]
        if not answers:
            raise next(o for o in outcomes if isinstance(o, CallError))
        return answers

    async def _each(self, live: list[ReplicaRecord], call: Callable[[Transport], Awaitable[Any]]) -> list[Any]:
        """``call`` on every replica at once; a ``CallError`` is its outcome, anything else raises."""
        outcomes = await asyncio.gather(*(call(self.pool.transport(r.url)) for r in live), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, CallError):
                raise outcome
        return outcomes

    # -- sampling ---------------------------------------------------------------------------------
    async def _answer(
        self, body: dict[str, Any], *, job_id: str | None = None, run_id: str | None = None
    ) -> tuple[dict[str, Any], str | None]:
        # A request outside a job (a check, a critique) still picks the least loaded replica.
        sample = await self.pool.chat(job_id or f"once-{uuid.uuid4().hex}", body, run_id)
        return sample.body, sample.replica_id

    # -- versions ---------------------------------------------------------------------------------
    async def load_adapter(self, name: str, path: str) -> float:
        """Load ``name`` on every live replica; returns the fan-out's seconds once every one lists it."""
        result = await self.fanout.publish(name, str(path))
        self.last_fanout = result
        if not result.current:
            missing = "; ".join(f"{rid}: {why}" for rid, why in sorted(result.missing.items()))
            raise ServiceUnavailable(SERVICE, f"adapter {name} is not on every live policy replica yet ({missing})")
        logger.info("adapter %s on %d replicas in %.3fs", name, len(result.per_replica_s), result.seconds)
        return result.seconds

    async def unload_adapter(self, name: str) -> None:
        await self.fanout.retire(name)

    # -- full weights: one server ------------------------------------------------------------------
    async def _one_server(self) -> PolicyClient:
        live = await self.live()
        if len(live) > 1:
            raise ServiceRejected(
                SERVICE,
                f"full weights are reloaded in one server, but {len(live)} policy replicas are live under "
                f"{self.prefix!r} ({', '.join(r.replica_id for r in live)}): train LoRA alone, or sample from one "
                "server (one replica, or unset HALO_TRAINER_POLICY_REPLICAS)",
                409,
            )
        return PolicyClient(live[0].url, self.base_model, timeout_s=self.timeout_s, api_key=self._api_key)

    async def weight_reload_available(self) -> bool:
        async with await self._one_server() as one:
            return await one.weight_reload_available()

    async def publish_weights(
        self,
        name: str,
        adapter_path: str,
        weights_path: str,
        *,
        before_resume: Callable[[], Awaitable[object]] | None = None,
    ) -> dict[str, float]:
        async with await self._one_server() as one:
            timing = await one.publish_weights(name, adapter_path, weights_path, before_resume=before_resume)
        # A restarted replica has the original weights: no adapter may be loaded there by joining.
        await self.fanout.forget(*await self.fanout.versions())
        self._current = name
        return timing

    async def reload_weights(self, weights_path: str) -> float:
        async with await self._one_server() as one:
            return await one.reload_weights(weights_path)
