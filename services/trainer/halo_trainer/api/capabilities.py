"""Submit-time check of a run against what its policy server can serve.

The policy service advertises its capabilities in Redis (``halo.schemas.policy_server``); a run
that needs one the server lacks is refused at ``POST /runs`` (422, naming the run's setting and the
server's), before its folder or status exist, instead of failing a second after it started. Without
a record (a vLLM started otherwise, a policy service on another Redis) nothing is refused here:
the run-start checks (``tower_check``, ``FullWeights.check_server``) decide as before.

With policy replicas (``HALO_TRAINER_POLICY_REPLICAS``) the registry says how many servers a
version must reach: a full-weights run is refused (409) while more than one replica is live, and so
is a staleness window that needs more adapters at once than a replica's ``max_loras``.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from pydantic import ValidationError

from halo.policy_replicas import ReplicaRegistry
from halo.schemas.policy_server import PolicyCapabilities, capabilities_key, url_port
from halo.settings.trainer import TrainerSettings
from halo_model.lora import reaches_vision
from halo_trainer.config import RunConfig, resident_adapters


async def served_capabilities(redis: aioredis.Redis, settings: TrainerSettings) -> PolicyCapabilities | None:
    raw = await redis.get(capabilities_key(settings.policy_model_name, url_port(settings.policy_url)))
    if raw is None:
        return None
    try:
        return PolicyCapabilities.model_validate_json(raw)
    except ValidationError:  # a record of another release: no early refusal rather than a wrong one
        return None


def refusals(cfg: RunConfig, caps: PolicyCapabilities, where: str) -> list[tuple[int, str]]:
    """(status, message) for each setting of ``cfg`` the server ``caps`` cannot honour."""
    out: list[tuple[int, str]] = []
    if reaches_vision(cfg.lora_target) and not caps.tower_lora:
        out.append(
            (
                422,
                f"lora_target {cfg.lora_target!r} trains LoRA on the vision side, but the policy server at {where} "
                "was started without tower LoRA and would drop those weights: restart it with "
                "HALO_POLICY_TOWER_LORA=true, or use lora_target 'language'",
            )
        )
    if cfg.full_weights and not caps.weight_reload:
        out.append(
            (
                422,
                f"full_weights {list(cfg.full_weights)} needs in-place weight reload, but the policy server at {where} "
                "was started without it: restart it with HALO_POLICY_WEIGHT_RELOAD=true, or train LoRA alone",
            )
        )
    if cfg.full_weights and caps.replicas > 1:
        out.append(
            (
                409,
                f"full_weights {list(cfg.full_weights)} cannot be served by {caps.replicas} policy replicas at {where} "
                "(weights are reloaded in one server at a time): train LoRA alone or serve one replica",
            )
        )
    if cfg.lora_r > caps.max_lora_rank:  # from the trainer's run defaults, not the request: a 409
        out.append(
            (
                409,
                f"lora_r {cfg.lora_r} is above the policy server's max_lora_rank {caps.max_lora_rank} at {where}: "
                f"lower lora_r (HALO_TRAINER_RL_CONFIG) or restart it with HALO_POLICY_MAX_LORA_RANK={cfg.lora_r}",
            )
        )
    return out


def learner_refusals(cfg: RunConfig, settings: TrainerSettings) -> list[tuple[int, str]]:
    """(status, message) for each setting of ``cfg`` this trainer's learner cannot train as asked."""
    dtype = settings.resolved_dtype()
    if cfg.full_weights and dtype != "float32":
        # bfloat16 keeps 8 bits of mantissa: an AdamW step below ~1/256 of a weight rounds to nothing
        # (tests/trainer/api/test_capabilities.py measures it), so the modules would silently not train.
        return [
            (
                422,
                f"full_weights {list(cfg.full_weights)} would train {dtype} weights, whose AdamW updates at "
                f"full_weights_lr {cfg.full_weights_lr:g} round to zero: set HALO_TRAINER_DTYPE=float32 where the card "
                "has room, or train LoRA alone (lora_target 'language+tower' reaches the vision side)",
            )
        ]
    return []


async def replica_refusals(cfg: RunConfig, redis: aioredis.Redis, settings: TrainerSettings) -> list[tuple[int, str]]:
    """(status, message) for each setting of ``cfg`` the live policy replicas cannot honour."""
    if settings.policy_replicas is None:
        return []
    live = await ReplicaRegistry(redis, settings.policy_replicas).live()
    out: list[tuple[int, str]] = []
    if cfg.full_weights and len(live) > 1:
        out.append(
            (
                409,
                f"full_weights {list(cfg.full_weights)} cannot be served by {len(live)} live policy replicas "
                f"({', '.join(r.replica_id for r in live)}; HALO_TRAINER_POLICY_REPLICAS={settings.policy_replicas}): "
                "weights are reloaded in one server; train LoRA alone, or sample from one server (one replica, or "
                "unset HALO_TRAINER_POLICY_REPLICAS)",
            )
        )
    if live and resident_adapters(cfg.max_staleness) > (tightest := min(live, key=lambda r: r.max_loras)).max_loras:
        out.append(
            (
                409,
                f"max_staleness {cfg.max_staleness} keeps {resident_adapters(cfg.max_staleness)} adapters on every "
                f"policy replica, but replica {tightest.replica_id} holds at most {tightest.max_loras} (max_loras): "
                f"lower max_staleness or restart that replica with --max-loras {resident_adapters(cfg.max_staleness)}",
            )
        )
    return out
