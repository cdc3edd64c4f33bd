"""Versions of the policy into vLLM: serve, publish, retire, release.

Version k of a run is the adapter ``<run>-v<k>`` (version 0: the base model). Publishing saves it,
loads it into vLLM and makes it the version new samples use (the run's current-policy record in
Redis); versions too old for any accepted transition are unloaded, and when the run ends every
adapter of the run is (``release``). How a version reaches vLLM is one of two strategies:

- ``AdapterWeights``: the LoRA adapter alone, loaded at runtime (``/v1/load_lora_adapter``).
- ``FullWeights``: a run that also trains base modules (the vision tower, say) serves each
  version's base weights with its adapter, in one step under a pause of vLLM, so one adapter name
  names one set of weights, also after a vLLM restart; at the run's end vLLM gets the original
  weights back.

With several policy replicas (``HALO_TRAINER_POLICY_REPLICAS``, ``halo.policy_replicated``) the
same steps reach every live replica: a version is current only once every one lists it, a retired
one is unloaded from every one, and a full-weights run is refused while more than one is live.
Each publish then also records the replicas' counters for the run (``policy/replicas_live``,
``policy/wrong_adapter``, ``policy/failover_*``) in the update's metrics.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from pathlib import Path

import redis.asyncio as aioredis

from halo.policy_client import EngineDead, PolicyClient
from halo.schemas import PolicyVersion
from halo.transport import ServiceUnavailable
from halo_trainer.learner.ranks import Leader
from halo_trainer.loop_parts.progress import Progress
from halo_trainer.loop_parts.state import Counters
from halo_trainer.streams import set_current_policy

logger = logging.getLogger("halo.trainer.loop")

# What halo.policy_replicas counts per run: answers from another version than asked, and requests
# moved off a replica that did not answer or did not hold the version.
REPLICA_COUNTERS = ("wrong_adapter", "failover_down", "failover_not_found")


class WeightReloadUnavailable(RuntimeError):
    """A full-weights run on a vLLM started without in-place weight reload (HALO_POLICY_WEIGHT_RELOAD)."""


class AdapterWeights:
    """A run that trains LoRA alone: a version is its adapter."""

    def __init__(self, policy: PolicyClient, learner: Leader, run_dir: Path) -> None:
        self.policy, self.learner, self.run_dir = policy, learner, run_dir

    async def check_server(self) -> None:
        """Any vLLM with runtime LoRA loading serves adapters."""

    async def save(self, version: int) -> None:
        self.learner.save_adapter(self.run_dir / "adapters" / f"v{version}")  # every rank takes part

    async def load(self, record: PolicyVersion, redis: aioredis.Redis) -> dict[str, float]:
        # Workers in other processes may still sample from the previous version: old versions
        # are unloaded by `PolicyPublisher.retire`, by staleness, not by this client.
        seconds = await self.policy.publish_adapter(record.adapter_name, record.adapter_path)
        logger.info("adapter %s loaded into vLLM from %s (%.2f s)", record.adapter_name, record.adapter_path, seconds)
        return {"policy/adapter_load_s": seconds}

    async def retire(self, current: int) -> None:
        """Nothing besides adapters to retire."""

    async def release(self, current: PolicyVersion) -> None:
        """The base weights vLLM serves were never changed: only the run's adapters go
        (``PolicyPublisher.release`` unloads them)."""


class FullWeights(AdapterWeights):
    """A run that trains base modules too: a version is its adapter and its base weights. One
    process only (the learner across ranks refuses full weights), so its saves are local."""

    def __init__(self, policy: PolicyClient, learner: Leader, run_dir: Path) -> None:
        super().__init__(policy, learner, run_dir)
        self._checked = False

    def _weights(self, version: int) -> Path:
        return self.run_dir / "weights" / f"v{version}"

    async def check_server(self) -> None:
        """Refuse a full-weights run on a vLLM that cannot reload weights, or on several replicas
        (weights are reloaded in one server), before any sample is taken."""
        if self._checked:
            return
        if (replicas := await self.policy.replica_count()) > 1:
            raise WeightReloadUnavailable(
                f"this run trains full weights but {replicas} policy replicas are live ({self.policy.base_url}), "
                "and weights are reloaded in one server: train LoRA alone, or sample from one server (one replica, "
                "or unset HALO_TRAINER_POLICY_REPLICAS)"
            )
        if not await self.policy.weight_reload_available():
            raise WeightReloadUnavailable(
                f"this run trains full weights ({', '.join(self.learner.local.weights.full_weight_names()[:3])}, "
                f"...) but the policy server at {self.policy.base_url} cannot reload weights (no /collective_rpc): "
                "start it with HALO_POLICY_WEIGHT_RELOAD=true (vLLM's dev mode), or train LoRA alone"
            )
        self._checked = True

    async def save(self, version: int) -> None:
        await super().save(version)
        await asyncio.to_thread(self.learner.local.weights.save_base_weights, self._weights(version))

    async def load(self, record: PolicyVersion, redis: aioredis.Redis) -> dict[str, float]:
        weights = self._weights(record.version)
        if not weights.exists():
            await asyncio.to_thread(self.learner.local.weights.save_base_weights, weights)
        timing = await self.policy.publish_weights(
            record.adapter_name,
            record.adapter_path,
            str(weights),
            before_resume=lambda: set_current_policy(redis, record),
        )
        logger.info("weights and adapter %s served from %s (%.2f s)", record.adapter_name, weights, timing["total_s"])
        return {f"policy/weights_{k}": v for k, v in timing.items()}

    async def retire(self, current: int) -> None:
        """Keep only the current version's weights folder: the older ones are served nowhere
        (``publish_weights`` unloaded their adapters), and on a GPU box each is the model's size."""
        for old in (self.run_dir / "weights").glob("v*"):
            if old.name != f"v{current}":
                await asyncio.to_thread(shutil.rmtree, old, True)

    async def release(self, current: PolicyVersion) -> None:
        folder = self._weights(0)
        await asyncio.to_thread(self.learner.local.weights.save_initial_base_weights, folder)
        seconds = await self.policy.reload_weights(str(folder))
        await asyncio.to_thread(shutil.rmtree, folder, True)
        logger.info("run %s ended: vLLM serves the base weights again (%.2f s)", current.run_id, seconds)


class PolicyPublisher:
    def __init__(
        self,
        *,
        run_id: str,
        redis: aioredis.Redis,
        policy: PolicyClient,
        learner: Leader,
        run_dir: Path,
        counters: Counters,
        max_staleness: int,
        outage_wait_s: float,
        progress: Progress | None = None,
    ) -> None:
        self.run_id, self.redis, self.policy, self.run_dir, self.c = run_id, redis, policy, run_dir, counters
        self.progress = progress or Progress()
        self.max_staleness, self.outage_wait_s = max_staleness, outage_wait_s
        strategy = FullWeights if learner.local.weights.full_weight_names() else AdapterWeights
        self.weights: AdapterWeights = strategy(policy, learner, run_dir)
        self.sync_metrics: dict[str, float] = {}  # the last publish's timings, for the update's metrics

    def record(self, version: int) -> PolicyVersion:
        name = self.policy.base_model if version == 0 else f"{self.run_id}-v{version}"
        path = None if version == 0 else str(self.run_dir / "adapters" / f"v{version}")
        return PolicyVersion(
            run_id=self.run_id, version=version, adapter_name=name, adapter_path=path, created_at=time.time()
        )

    def current(self) -> PolicyVersion:
        return self.record(self.c.version)

    async def serve(self, version: int) -> None:
        """Make ``version`` the one new samples use: load it into vLLM (if needed), then tell the workers.

        A vLLM that is down (restarting after a crash, say) is waited for, up to ``outage_wait_s``.
        """
        deadline = time.monotonic() + self.outage_wait_s
        while True:
            try:
                await self.weights.check_server()
                await self.ensure_served(version)
                await set_current_policy(self.redis, self.record(version))
                await self._retire(version)
                if self.policy.replicated:
                    self.sync_metrics |= await self.replica_metrics()
                return
            except (ServiceUnavailable, EngineDead) as exc:
                if time.monotonic() > deadline:
                    raise
                logger.warning("policy server unavailable while serving v%d (%s); waiting", version, exc)
                self.progress.note(f"waiting for vLLM to serve v{version}: {exc}")
                await self.progress.tick()
                await asyncio.sleep(10)

    async def ensure_served(self, version: int) -> None:
        """Load ``version`` into vLLM unless ``/v1/models`` already lists it.

        After a vLLM restart this is the only version that must come back: every sample reads the
        run's current version from Redis, so no new request names an older one, and the jobs that
        sampled from older ones failed with the server.
        """
        if version == 0:
            return
        record = self.record(version)
        if record.adapter_name in {m["id"] for m in await self.policy.models()}:
            return
        if not Path(record.adapter_path).exists():
            await self.weights.save(version)
        self.sync_metrics |= await self.weights.load(record, self.redis)

    async def publish_next(self) -> None:
        """Save the learner as the next version and serve it."""
        version = self.c.version + 1
        await self.progress.enter("publishing", f"publishing v{version} into vLLM")
        await self.weights.save(version)
        await self.serve(version)
        self.c.version = version

    async def _retire(self, current: int) -> None:
        """Unload adapters too old for any accepted transition (vLLM keeps a bounded number resident)."""
        await self.weights.retire(current)
        oldest_needed = current - self.max_staleness
        if oldest_needed <= 1:
            return  # no adapter is old enough yet
        served = await self.policy.served_names()  # several replicas: held by any of them
        for v in range(max(1, oldest_needed - 5), oldest_needed):
            name = f"{self.run_id}-v{v}"
            if name in served:
                await self.policy.unload_adapter(name)

    async def replica_metrics(self) -> dict[str, float]:
        """The live replicas and this run's infrastructure failures on them: always every counter,
        so a chart of them is continuous from the run's first publish."""
        counters = await self.policy.infra_counters(self.run_id)
        metrics = {f"policy/{what}": float(counters.get(what, 0)) for what in REPLICA_COUNTERS}
        return metrics | {"policy/replicas_live": float(await self.policy.replica_count())}

    async def release(self) -> None:
        """A run's end: vLLM serves what it served before the run (a full-weights run's base
        weights back, every adapter of the run unloaded). Without this, every later run and every
        base-model evaluation on that server would sample from this run's weights, and the run's
        leftover adapters would take ``max_loras`` slots from later runs (vLLM then evicts and
        reloads). Not called when the trainer shuts down: the run resumes, and serves its version
        again."""
        try:
            if self.c.version > 0:
                await self.weights.release(self.current())
        finally:  # a failed weights restore still frees the adapters' slots
            await self.policy.unload_run_adapters(self.run_id)
