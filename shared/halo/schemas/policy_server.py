"""What a policy server can serve, as the policy service advertises it in Redis.

The trainer cannot read the policy server's settings (each setting has one owner), yet a run's
settings can need what only those settings decide: LoRA on the vision tower
(``HALO_POLICY_TOWER_LORA``), in-place full-weight reload (``HALO_POLICY_WEIGHT_RELOAD``), an
adapter rank (``HALO_POLICY_MAX_LORA_RANK``). So ``python -m halo_policy`` writes this record once
vLLM is healthy, refreshes it while vLLM runs and deletes it when it stops (a TTL covers a
supervisor that is killed), and the trainer refuses at ``POST /runs``, before the run exists, a run
the server cannot honour. No record (a vLLM not started by ``halo_policy``, another Redis): the
run-start checks still stand (docs/trainer.md).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from halo.schemas.base import Message

CAPABILITIES_TTL_S = 30  # the record outlives a killed supervisor by at most this long
CAPABILITIES_REFRESH_S = 10


class PolicyCapabilities(Message):
    served_model_name: str
    port: int
    tower_lora: bool  # adapters' vision tower and merger keys are applied
    weight_reload: bool  # /collective_rpc reload_weights and /pause, /resume (dev mode)
    max_lora_rank: int
    max_loras: int
    replicas: int = 1  # vLLM servers behind this name and port that a version must reach
    published_at: float


def capabilities_key(served_model_name: str, port: int) -> str:
    """One record per served name and port: what both sides know of the server (the trainer's
    policy URL may name it by another host, ``policy`` inside Compose, ``127.0.0.1`` outside)."""
    return f"halo:policy:capabilities:{served_model_name}:{port}"


def url_port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)
