"""The policy server's capabilities in Redis (``halo.schemas.policy_server``), for the trainer to
check a run against at submit time.

Written once vLLM is healthy and refreshed every ``CAPABILITIES_REFRESH_S`` by a thread while the
supervisor waits on vLLM; deleted when it stops. Redis being down, or its client not installed
(the vLLM image of Compose has none), never stops the policy server: the record is only an early
refusal, and the run-start checks stand without it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from halo.schemas.policy_server import (
    CAPABILITIES_REFRESH_S,
    CAPABILITIES_TTL_S,
    PolicyCapabilities,
    capabilities_key,
)
from halo.settings.policy import PolicySettings

logger = logging.getLogger("halo.policy.capabilities")


def capabilities(settings: PolicySettings) -> PolicyCapabilities:
    return PolicyCapabilities(
        served_model_name=settings.served_model_name,
        port=settings.port,
        tower_lora=bool(settings.tower_lora),
        weight_reload=settings.resolved_weight_reload(),
        max_lora_rank=settings.max_lora_rank,
        max_loras=settings.max_loras,
        published_at=time.time(),
    )


class Advertiser:
    """``start()`` once vLLM is healthy, ``stop()`` when it is going (deletes the record)."""

    def __init__(self, settings: PolicySettings) -> None:
        self.settings = settings
        self.key = capabilities_key(settings.served_model_name, settings.port)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="capabilities", daemon=True)
        self._warned = False
        try:
            import redis
        except ImportError:
            logger.info(
                "no Redis client here: the server's capabilities are not advertised (runs are checked at start)"
            )
            self.client = None
            return
        self.client = redis.Redis.from_url(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)

    def start(self) -> None:
        if self.client is not None:
            self._thread.start()

    def _publish(self) -> None:
        try:
            self.client.set(self.key, capabilities(self.settings).model_dump_json(), ex=CAPABILITIES_TTL_S)
            self._warned = False
        except Exception as exc:  # redis.RedisError; any failure here is only a missing early refusal
            if not self._warned:  # once per outage, not every 10 s
                logger.warning(
                    "cannot advertise the server's capabilities in Redis (%s): runs are checked at start", exc
                )
                self._warned = True

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._publish()
            self._stop.wait(CAPABILITIES_REFRESH_S)

    def stop(self) -> None:
        if self.client is None:
            return
        self._stop.set()
        self._thread.join(timeout=10)
        with contextlib.suppress(Exception):
            self.client.delete(self.key)
        self.client.close()
