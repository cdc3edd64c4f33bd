"""Check 2: one LoRA adapter of the run's rank loads into vLLM (``/v1/load_lora_adapter``, through the
policy client's own method), answers one sample that differs from the base model's, and is unloaded.

The adapter is random (``halo_model.lora.random_adapter``): a no-op adapter would pass even where vLLM
ignored it. It is written under the data folder, which vLLM reads at the same path (Compose mounts the
data volume in both containers), and deleted after.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from halo.policy_client import PolicyClient
from halo.schemas import SamplingParams
from halo.schemas.doctor import DoctorCheck
from halo.transport import NotFound, ServiceRejected
from halo_model.lora import random_adapter
from halo_trainer.doctor.samples import Screen
from halo_trainer.learner.for_run import LearnerParts


async def one_adapter(
    policy: PolicyClient, parts: LearnerParts, screen: Screen, sampling: SamplingParams, folder: Path, dtype: str
) -> DoctorCheck:
    cfg = parts.config
    name = f"doctor-{secrets.token_hex(3)}"
    path = folder / name
    random_adapter(
        parts.model_path, path, seed=0, rank=cfg.lora_r, alpha=cfg.lora_alpha, target=cfg.lora_target, dtype=dtype
    )
    ask = {"n": 1, "temperature": 1.0, "seed": 1, "sampling": sampling}
    try:
        base = await policy.sample_actions(screen.png, screen.goal, model=policy.base_model, **ask)
        try:
            load_s = await policy.load_adapter(name, str(path))
        except (NotFound, ServiceRejected) as exc:
            return DoctorCheck(
                name="adapter",
                ok=False,
                detail=f"r={cfg.lora_r} adapter refused: {str(exc)[:160]}",
                fix=f"start vLLM with runtime LoRA and a max LoRA rank of at least {cfg.lora_r} "
                "(HALO_POLICY_MAX_LORA_RANK; the policy service sets VLLM_ALLOW_RUNTIME_LORA_UPDATING)",
            )
        try:
            tuned = await policy.sample_actions(screen.png, screen.goal, model=name, **ask)
        finally:
            await policy.unload_adapter(name)
    finally:
        shutil.rmtree(path, ignore_errors=True)
    left = name in await policy.served_names()
    a, b = base.candidates[0], tuned.candidates[0]
    changed = (a.token_ids, a.logprobs) != (b.token_ids, b.logprobs)
    detail = f"r={cfg.lora_r} {name} loaded, sampled once, unloaded"
    if not changed:
        fix = "vLLM answered the adapter's name with the base model's sample: its LoRA is not applied (docs/policy.md)"
        return DoctorCheck(name="adapter", ok=False, figure=load_s, unit="s", detail=detail, fix=fix)
    if left:
        fix = f"vLLM still lists {name} after the unload: restart the policy service"
        return DoctorCheck(name="adapter", ok=False, figure=load_s, unit="s", detail=detail, fix=fix)
    return DoctorCheck(name="adapter", ok=True, figure=load_s, unit="s", detail=detail + " (its sample differs)")
