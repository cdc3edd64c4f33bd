"""The run-start tower-LoRA check: does the policy server apply an adapter's vision-side keys?

A run whose ``lora_target`` reaches the vision merger or tower trains LoRA weights that vLLM 0.32
applies only when started with ``--enable-tower-connector-lora`` (``HALO_POLICY_TOWER_LORA``);
without it they are dropped with a start-up warning alone, and every update would be scored
against a served policy that is not the trained one. The trainer cannot read the policy server's
settings (each setting has one owner), so it asks the server: a throwaway copy of the learner's
adapter whose only non-zero B matrices are on the vision side is loaded under a temporary name,
and a greedy answer on a blank screenshot is compared with the base model's. Identical tokens and
log-probs mean the vision keys were ignored, and the run is refused before any job.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

from halo.policy_client import PolicyClient
from halo.schemas.rollout import SamplingParams
from halo.transport import CallError
from halo_model.lora import reaches_vision
from halo_trainer.checks.prompt_check import PromptCheckFailed, blank_screenshot

logger = logging.getLogger("halo.trainer.tower_check")

PROBE_GOAL = "Check that the policy server applies the adapter's vision weights."
# Enough tokens to pass a near-certain opening (an 8B model's "<tool_call>") and reach the
# image-dependent part of an answer; no grammar, which would force the opening to log-prob 0.
PROBE_TOKENS = 24
# Far above float noise between two requests, far below what the probe's perturbation moves.
APPLIED = 1e-3
PROBE_B_SCALE = 0.2
READY_TIMEOUT_S = 600.0


class TowerLoraIgnored(PromptCheckFailed):
    """The policy server drops the vision-side keys of a run's adapter (no tower LoRA)."""


class TowerCheckUnanswered(PromptCheckFailed):
    """The policy server could not be asked whether it applies vision-side LoRA (down, or not ready
    in time): the run is refused as a setup problem, with the reason, rather than failing later."""


def probe_adapter(learner: Any, directory: Path, seed: int = 0) -> Path:
    """The learner's adapter saved to ``directory`` with every B zero but the vision side's, which
    are random: served with its vision keys applied it changes the image encoding, ignored it is
    the base model. The learner's own weights are not touched."""
    import torch
    from safetensors.torch import load_file, save_file

    from halo_trainer.learner.ranks import Leader

    Leader.of(learner).save_adapter(directory)  # every rank takes part when the learner spans ranks
    path = directory / "adapter_model.safetensors"
    state = load_file(str(path))
    generator = torch.Generator().manual_seed(seed)
    vision = 0
    for key, tensor in state.items():
        if "lora_B" not in key:
            continue
        if ".visual." in key:
            vision += 1
            state[key] = (torch.randn(tensor.shape, generator=generator) * PROBE_B_SCALE).to(tensor.dtype)
        else:
            state[key] = torch.zeros_like(tensor)
    if not vision:
        raise ValueError(f"the learner's adapter has no vision-side LoRA (lora_target={learner.config.lora_target})")
    save_file(state, str(path), metadata={"format": "pt"})
    return directory


def _answers_differ(base: Any, probed: Any) -> float:
    """How far the probe's greedy answer is from the base model's: inf when the tokens differ,
    else the largest log-prob difference."""
    if base.token_ids != probed.token_ids:
        return float("inf")
    return max((abs(a - b) for a, b in zip(base.logprobs, probed.logprobs, strict=True)), default=0.0)


async def tower_lora_problem(
    policy: PolicyClient, learner: Any, sampling: SamplingParams, directory: Path
) -> str | None:
    """None when the server applies the vision side of an adapter, else what to change.

    ``directory`` must be readable by the policy server (the run folder is); it is removed after.
    Raises the policy client's ``CallError`` when vLLM cannot be asked."""
    png = blank_screenshot(sampling.viewport.width, sampling.viewport.height)
    free = sampling.model_copy(update={"structured_outputs": "off"})
    name = f"tower-probe-{uuid.uuid4().hex[:8]}"
    try:
        await asyncio.to_thread(probe_adapter, learner, directory)
        await policy.load_adapter(name, str(directory))
        try:
            answers = [
                await policy.sample_actions(
                    png, PROBE_GOAL, n=1, temperature=0.0, seed=0, model=model, max_tokens=PROBE_TOKENS, sampling=free
                )
                for model in (policy.base_model, name)
            ]
        finally:
            await policy.unload_adapter(name)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    gap = _answers_differ(answers[0].candidates[0], answers[1].candidates[0])
    logger.info("tower LoRA probe: the vision-only adapter moved the answer by %s", gap)
    if gap > APPLIED:
        return None
    return (
        f"lora_target={learner.config.lora_target} trains LoRA on the vision side, but the policy server ignores "
        "it (an adapter with vision-side weights only answered exactly as the base model): start vLLM with "
        "--enable-tower-connector-lora (HALO_POLICY_TOWER_LORA=true; Compose: HALO_TOWER_LORA=true), or run "
        "with lora_target=language"
    )


async def check_tower_lora(
    policy: PolicyClient, learner: Any, cfg: Any, run_dir: Path, timeout_s: float = READY_TIMEOUT_S
) -> None:
    """Before any job of a run (``cfg``: its ``RunConfig``) whose ``lora_target`` reaches the vision side: refuse it
    (``TowerLoraIgnored``) unless the policy server applies vision-side LoRA, and refuse it
    (``TowerCheckUnanswered``) when the server cannot be asked within ``timeout_s``. Unlike the
    prompt check, it waits for a server that is still starting: skipping it would let the run train
    against one that drops its adapter's vision weights."""
    if not reaches_vision(cfg.lora_target):
        return
    try:
        await policy.wait_ready(timeout_s=timeout_s)
        problem = await tower_lora_problem(policy, learner, cfg.sampling, run_dir / "tower_probe")
    except CallError as exc:
        raise TowerCheckUnanswered(
            f"lora_target={cfg.lora_target} needs the policy server to apply vision-side LoRA, and it could not "
            f"be asked ({exc}); start it (`halo stack up`, or Compose's policy service) and start the run again"
        ) from exc
    if problem is not None:
        raise TowerLoraIgnored(problem)
