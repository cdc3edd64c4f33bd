"""The policy service's advertised capabilities (``halo_policy.capabilities``) in the real Redis.

What the trainer does with them is tested in tests/trainer/api/test_runs.py, and against the real
policy service of the local stack in tests/e2e/test_training.py.
"""

from __future__ import annotations

import time
import uuid

import redis

from halo.schemas.policy_server import CAPABILITIES_TTL_S, PolicyCapabilities, capabilities_key
from halo.settings.policy import PolicySettings
from halo_policy.capabilities import Advertiser
from tests.conftest import free_port


def test_the_record_says_what_the_server_was_started_with_and_goes_with_it(redis_url: str) -> None:
    name, port = f"caps-{uuid.uuid4().hex[:8]}", free_port()
    settings = PolicySettings(
        _env_file=None, redis_url=redis_url, served_model_name=name, port=port, tower_lora=True, max_lora_rank=32
    )
    client, key = redis.Redis.from_url(redis_url), capabilities_key(name, port)
    advertiser = Advertiser(settings)
    advertiser.start()
    try:
        deadline = time.monotonic() + 10
        while (raw := client.get(key)) is None:
            assert time.monotonic() < deadline, "no record written"
            time.sleep(0.05)
        caps = PolicyCapabilities.model_validate_json(raw)
        assert (caps.served_model_name, caps.port, caps.tower_lora, caps.max_lora_rank) == (name, port, True, 32)
        assert caps.weight_reload is True  # the cpu target's default (dev mode on)
        assert 0 < client.ttl(key) <= CAPABILITIES_TTL_S  # a killed supervisor's record expires
    finally:
        advertiser.stop()
    assert client.get(key) is None


def test_redis_down_never_stops_the_policy_server(caplog) -> None:
    settings = PolicySettings(_env_file=None, redis_url=f"redis://127.0.0.1:{free_port()}/0")
    advertiser = Advertiser(settings)
    advertiser.start()
    time.sleep(0.5)
    advertiser.stop()  # no exception: the record is only an early refusal
    assert "cannot advertise the server's capabilities" in caplog.text
