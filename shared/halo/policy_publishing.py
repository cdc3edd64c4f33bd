"""Policy versions on the server: adapters loaded, made current and unloaded, and full weights.

Adapters: each policy version is loaded under a new name ``<run>-v<k>`` and made current; the
publisher unloads old versions itself, because only it knows which versions rollouts (of any
process) may still use. A name is never reloaded in place: vLLM's in-place reload keeps a prefix
cache keyed by the name.

Full weights (a run that trains modules LoRA cannot reach, the vision tower say): ``publish_weights``
serves new base weights and the new adapter as one version, under a pause, and unloads every older
adapter (their base weights are gone). It needs vLLM's dev-mode routes
(``HALO_POLICY_WEIGHT_RELOAD``); ``weight_reload_available`` says whether the server has them.

``PolicyPublishing`` is a part of ``PolicyClient`` (a mixin): the client provides the transport,
the base model, the current served name and ``models()``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from halo.policy_errors import SERVICE
from halo.transport import NotFound, ServiceRejected, ServiceUnavailable, Transport

# The client's logger: adapter loads were always logged as halo.policy_client's.
logger = logging.getLogger("halo.policy_client")


class PolicyPublishing:
    """The adapter and weight half of ``PolicyClient``; see the module docstring."""

    base_model: str
    _http: Transport
    _current: str
    replicated = False  # one server (``halo.policy_replicated``: several replicas behind one policy)

    if TYPE_CHECKING:

        async def models(self) -> list[dict[str, Any]]: ...

    # -- adapters ---------------------------------------------------------------------------------
    async def served_names(self) -> set[str]:
        """Every name the server lists (several replicas: any of them), what unloading must reach."""
        return {str(m["id"]) for m in await self.models()}

    async def replica_count(self) -> int:
        """How many servers a version must reach: one here (``halo.policy_replicated``: the live ones)."""
        return 1

    async def infra_counters(self, run_id: str) -> dict[str, int]:
        """The run's infrastructure failures the servers caused (failovers, wrong adapters); one
        server keeps none: its failures are the run's infrastructure-failed jobs."""
        return {}

    async def load_adapter(self, name: str, path: str) -> float:
        """Load a PEFT adapter under a new name; returns the seconds the load took.

        Refuses a name that is already served: a policy version is immutable, reloading a name in
        place would serve stale prefix-cache entries (see docs/policy.md).
        """
        served = {m["id"] for m in await self.models()}
        if name in served:
            raise ServiceRejected(SERVICE, f"adapter {name!r} is already loaded; a new version needs a new name")
        started = time.perf_counter()
        try:
            # Not retried blindly: a load whose answer was lost may have happened; check instead.
            await self._http.request(
                "POST", "/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(path)}, retry=False
            )
        except ServiceUnavailable:
            if name not in {m["id"] for m in await self.models()}:
                raise
        elapsed = time.perf_counter() - started
        logger.info("loaded adapter %s from %s in %.3fs", name, path, elapsed)
        return elapsed

    async def unload_adapter(self, name: str) -> None:
        """Unload an adapter (a version no rollout may use any more)."""
        try:
            await self._http.request("POST", "/v1/unload_lora_adapter", json={"lora_name": name})
        except NotFound:
            logger.info("adapter %s was not loaded (already unloaded?)", name)

    async def unload_run_adapters(self, run_id: str) -> list[str]:
        """A run's end: unload every adapter served under the run's names (``<run>-v<k>``),
        whichever versions the staleness window kept; returns their names. Only the run's own
        names go: a promoted mode's adapter (``<mode>-<digest>``) and other runs' stay."""
        prefix = f"{run_id}-v"
        names = sorted(
            name for name in await self.served_names() if name.startswith(prefix) and name[len(prefix) :].isdigit()
        )
        for name in names:
            await self.unload_adapter(name)
        if names:
            logger.info("run %s ended: unloaded its adapters %s", run_id, ", ".join(names))
        return names

    async def publish_adapter(self, name: str, path: str) -> float:
        """Load ``name`` (``<run>-v<k>``) and make it current; returns the load time in seconds.

        The previous version stays loaded: rollouts in flight (in this or other processes) and
        accepted stale ones may still use it; the publisher unloads it (``unload_adapter``).
        """
        elapsed = await self.load_adapter(name, path)
        self._current = name
        return elapsed

    # -- full weights -----------------------------------------------------------------------------
    async def weight_reload_available(self) -> bool:
        """Whether the server has the routes ``publish_weights`` needs (vLLM in dev mode,
        ``HALO_POLICY_WEIGHT_RELOAD``): a GET on the POST-only ``/collective_rpc`` answers 405 when
        the route exists and 404 when it does not; nothing is changed on the server."""
        try:
            await self._http.request("GET", "/collective_rpc", retry=False, timeout_s=10.0)
        except NotFound:
            return False
        except ServiceRejected as exc:
            return exc.status == 405
        return True

    async def publish_weights(
        self,
        name: str,
        adapter_path: str,
        weights_path: str,
        *,
        before_resume: Callable[[], Awaitable[object]] | None = None,
    ) -> dict[str, float]:
        """Serve new base weights (a model folder) together with adapter ``name``, one version.

        1. ``/pause?mode=wait``: requests in flight finish on the old weights; new ones queue,
        2. ``reload_weights`` from ``weights_path`` in place (``/collective_rpc``; vLLM then drops its
           encoder, multimodal and LoRA caches, and the pause cleared the prefix cache),
        3. load adapter ``name``, make it current, and unload every other adapter: a request that
           names an older version from now on gets a 404 instead of mixing old LoRA and new weights,
        4. ``before_resume`` (the publisher makes ``name`` current for its workers), abort what
           queued during the pause (it named an older version; ``sample_actions`` raises
           ``SampleAborted``), then ``/resume``.
        The server stays paused for no longer than these steps: resume runs on any failure.
        Returns the seconds of each step (``pause_s``, ``reload_s``, ``adapter_s``, ``total_s``).
        """
        started = time.perf_counter()
        async with self._paused():
            paused = time.perf_counter()
            await self._reload(weights_path)
            reloaded = time.perf_counter()
            served = {m["id"] for m in await self.models()}
            if name not in served:
                await self.load_adapter(name, adapter_path)
            self._current = name
            for other in served - {name, self.base_model}:
                await self.unload_adapter(other)
            loaded = time.perf_counter()
            if before_resume is not None:
                await before_resume()
            await self._http.request("POST", "/abort_requests", json={}, retry=False)
        done = time.perf_counter()
        logger.info("weights %s and adapter %s served in %.3fs", weights_path, name, done - started)
        return {
            "pause_s": paused - started,
            "reload_s": reloaded - paused,
            "adapter_s": loaded - reloaded,
            "total_s": done - started,
        }

    async def reload_weights(self, weights_path: str) -> float:
        """Reload the base weights alone (no version change: a restore, a test); returns seconds.
        Under a pause like ``publish_weights``: see ``_paused`` for why a bare reload is unsafe."""
        started = time.perf_counter()
        async with self._paused():
            await self._reload(weights_path)
        return time.perf_counter() - started

    @contextlib.asynccontextmanager
    async def _paused(self) -> AsyncIterator[None]:
        """Inside: the server paused by ``/pause?mode=wait&clear_cache=true`` (requests in flight
        drained, new ones queued, the engine's caches cleared); ``/resume`` on the way out, also on a
        failure. The clearing is not optional: ``reload_weights`` empties the worker's encoder cache
        but not the scheduler's record of it, and the next request with an image seen before then
        kills the engine ("Encoder cache miss"); the pause clears both sides."""
        await self._http.request(
            "POST", "/pause", params={"mode": "wait", "clear_cache": "true"}, retry=False, timeout_s=600.0
        )
        try:
            yield
        finally:
            await self._http.request("POST", "/resume", retry=True)

    async def _reload(self, weights_path: str) -> None:
        await self._http.request(
            "POST",
            "/collective_rpc",
            json={"method": "reload_weights", "kwargs": {"weights_path": str(weights_path)}},
            retry=False,
            timeout_s=600.0,
        )

    def use_base_model(self) -> None:
        """Send new requests to the base model (evaluation of version 0); adapters stay loaded."""
        self._current = self.base_model
