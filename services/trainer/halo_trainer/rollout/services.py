"""The service clients a rollout worker plays through (``Services``), from the trainer's settings only."""

from __future__ import annotations

import redis.asyncio as aioredis

from halo.clients import EnvClient, RewardClient
from halo.policy_client import PolicyClient
from halo.policy_replicated import ReplicatedPolicyClient
from halo.settings.trainer import TrainerSettings
from halo.store import remote_store
from halo_trainer.rollout.play import Services
from halo_trainer.streams import current_policy_reader


def policy_client(settings: TrainerSettings) -> PolicyClient:
    """The trainer's client of vLLM, from the trainer's own settings only: the one server at
    ``policy_url``, or with ``policy_replicas`` the replicas registered under that prefix.

    It holds no sampling defaults the trainer relies on: every request passes its job's
    ``SamplingParams`` (the run's config), so workers serving several runs ask each run's way.
    """
    if settings.policy_replicas is not None:
        return ReplicatedPolicyClient(
            settings.redis_url,
            settings.policy_replicas,
            settings.policy_model_name,
            sticky_ttl_s=settings.policy_sticky_ttl_s,
            timeout_s=settings.request_timeout_s,
            data_root=settings.data_dir,  # adapters are named by their store key for replicas that fetch
            api_key=settings.policy_api_key.get_secret_value(),
        )
    return PolicyClient(
        settings.policy_url,
        settings.policy_model_name,
        timeout_s=settings.request_timeout_s,
        api_key=settings.policy_api_key.get_secret_value(),
    )


def make_services(settings: TrainerSettings, redis: aioredis.Redis) -> Services:
    """The clients, and the head's data store where this worker's folder is not the head's
    (``HALO_STORE_*``, the data plane's settings, as the screenshot store reads them)."""
    return Services(
        env=EnvClient(settings.env_url, timeout_s=settings.request_timeout_s),
        policy=policy_client(settings),
        reward=RewardClient(settings.reward_url, timeout_s=settings.request_timeout_s),
        current_policy=current_policy_reader(redis),
        head_store=remote_store(),
    )
