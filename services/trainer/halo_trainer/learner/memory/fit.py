"""Does the memory plan fit the learner's card beside vLLM, and if not, the one setting to change
(``halo_trainer.learner.memory.plan``): ``Card``, ``MemoryPlan`` (its table, verdict and JSON) and ``plan``.

vLLM's share is ``gpu_memory_utilization`` x the card's total memory; it must hold vLLM's bf16
weights, one ``max_model_len`` sequence of KV cache and vLLM's own working memory (profiling
activations, CUDA graphs, its CUDA context: an estimate, ``VLLM_WORKING_GIB``), or vLLM itself
refuses to start. On one card the learner gets what vLLM leaves (or what the card reports free,
when that is less); on two cards (``HALO_TRAINER_POLICY_SHARES_CARD=false``) its card to itself.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from halo_trainer.learner.memory.dims import DTYPE_BYTES, GIB, ModelDims
from halo_trainer.learner.memory.parts import CUDA_CONTEXT_GIB, Workload, breakdown, prompt_tokens

VLLM_WORKING_GIB = 3.0  # vLLM's profiling activations, CUDA graphs and CUDA context inside its share

# Settings the messages name (one owner each).
ENV_DTYPE = "HALO_TRAINER_DTYPE"
ENV_CHECKPOINTING = "HALO_TRAINER_LEARNER__GRADIENT_CHECKPOINTING"
ENV_MICRO_BATCH = "HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE"
ENV_UTILIZATION = "HALO_GPU_MEMORY_UTILIZATION (Compose; HALO_POLICY_GPU_MEMORY_UTILIZATION outside it)"
ENV_SHARES_CARD = "HALO_TRAINER_POLICY_SHARES_CARD"
TWO_CARDS = (
    "use two cards: vLLM on one, the learner on the other (HALO_TRAINER_GPU=1 and "
    f"-f docker-compose.two-gpu.yml: policy device_ids [0], trainer [1], {ENV_SHARES_CARD}=false; docs/compose.md)"
)
TWO_CARD_UTILIZATION = 0.90  # vLLM's share of its own card in the two-card layout (docker-compose.two-gpu.yml)


@dataclass(frozen=True)
class Card:
    """The learner's card and what runs beside it."""

    total_gib: float
    # Measured (torch.cuda.mem_get_info) at a run's start, vLLM already holding its share: what the
    # learner gets. None = planned: the whole card, less vLLM's share when it shares the card.
    free_gib: float | None = None
    policy_shares_card: bool = True
    gpu_memory_utilization: float = 0.45
    policy_max_model_len: int = 8192
    # The card vLLM runs on when it is not this one: None = not known here (the trainer's start check
    # on two cards; vLLM refuses to start itself when its share is too small).
    policy_card_gib: float | None = None

    @property
    def vllm_card_gib(self) -> float | None:
        """vLLM's card when its share is checked here; None at a run's start (measured free memory
        already shows what vLLM took, and vLLM refuses to start itself when its share is too small)."""
        if self.free_gib is not None:
            return None
        return self.total_gib if self.policy_shares_card else self.policy_card_gib


@dataclass
class MemoryPlan:
    dims: ModelDims
    work: Workload
    card: Card
    items: list[tuple[str, float, str]] = field(default_factory=list)
    reference_pass_gib: float = 0.0
    vllm_share_gib: float = 0.0
    vllm_need_gib: float = 0.0
    available_gib: float = 0.0
    fix: str | None = None

    @property
    def learner_gib(self) -> float:
        return sum(gib for _, gib, _ in self.items)

    @property
    def peak_gib(self) -> float:
        """The learner's peak: the gradient pass or the KL reference pass, whichever is larger."""
        return max(self.learner_gib, self.reference_pass_gib)

    @property
    def vllm_fits(self) -> bool:
        return self.card.vllm_card_gib is None or self.vllm_share_gib >= self.vllm_need_gib

    @property
    def learner_fits(self) -> bool:
        return self.peak_gib <= self.available_gib

    @property
    def fits(self) -> bool:
        return self.vllm_fits and self.learner_fits

    @property
    def headroom_gib(self) -> float:
        return self.available_gib - self.peak_gib

    def problem(self) -> str | None:
        if not self.vllm_fits:
            return (
                f"vLLM's share ({self.card.gpu_memory_utilization:.2f} x {self.card.vllm_card_gib:.1f} GiB = "
                f"{self.vllm_share_gib:.1f} GiB) is below what it needs: {self.vllm_need_gib:.1f} GiB "
                f"(bf16 weights {self.dims.params() * 2 / GIB:.1f}, KV cache for {self.card.policy_max_model_len} "
                f"tokens, {VLLM_WORKING_GIB:.1f} working)"
            )
        if not self.learner_fits:
            return (
                f"the learner needs {self.peak_gib:.1f} GiB at its peak but has {self.available_gib:.1f} GiB "
                f"({'beside vLLM on a shared' if self.card.policy_shares_card else 'on its own'} "
                f"{self.card.total_gib:.1f} GiB card)"
            )
        return None

    def table(self) -> str:
        w = self.work
        lines = [
            f"memory plan: Qwen3-VL {self.dims.params() / 1e9:.2f} B params, learner {w.dtype}, gradient "
            f"checkpointing {'on' if w.gradient_checkpointing else 'off'}, micro-batch {w.micro_batch_size}"
            f"{' DPO pairs' if w.dpo else ''} ({w.prompts()} prompts, packed), {self.prompt_tokens()} prompt + "
            f"{w.completion_tokens} completion tokens a row, LoRA r={w.lora_r}, full weights {list(w.full_weights) or 'none'}, kl_coef {w.kl_coef}"
            f"{f', per card of a learner on {w.learner_gpus} GPUs (FSDP2)' if w.learner_gpus > 1 else ''}",
        ]
        lines += [f"  {name:<34} {gib:7.2f} GiB  {note}" for name, gib, note in self.items]
        lines.append(f"  {'learner peak':<34} {self.peak_gib:7.2f} GiB")
        if self.work.kl_coef > 0:
            lines.append(
                f"  {'(KL reference pass peak)':<34} {self.reference_pass_gib:7.2f} GiB  no gradients, before each "
                "micro-batch's gradient pass: one more forward"
            )
        where = "beside vLLM" if self.card.policy_shares_card else "its own card"
        lines.append(f"  {'available to the learner':<34} {self.available_gib:7.2f} GiB  {where}")
        if self.card.vllm_card_gib is None:
            lines.append(f"  vLLM: on another card, not checked here (it needs {self.vllm_need_gib:.2f} GiB of it)")
        else:
            lines.append(
                f"  vLLM: share {self.vllm_share_gib:.2f} GiB (gpu_memory_utilization "
                f"{self.card.gpu_memory_utilization:.2f} x {self.card.vllm_card_gib:.1f} GiB), "
                f"needs {self.vllm_need_gib:.2f}"
            )
        lines.append(self.verdict())
        return "\n".join(lines)

    def verdict(self) -> str:
        if self.fits:
            return f"fits: {self.headroom_gib:.1f} GiB to spare"
        return f"does not fit: {self.problem()}. " + (self.fix or "")

    def prompt_tokens(self) -> int:
        return prompt_tokens(self.dims, self.work)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "items_gib": {name: round(gib, 3) for name, gib, _ in self.items},
            "learner_peak_gib": round(self.peak_gib, 3),
            "reference_pass_gib": round(self.reference_pass_gib, 3),
            "available_gib": round(self.available_gib, 3),
            "headroom_gib": round(self.headroom_gib, 3),
            "vllm_share_gib": round(self.vllm_share_gib, 3),
            "vllm_need_gib": round(self.vllm_need_gib, 3),
            # What vLLM loads and the Hub's safetensors hold: the model step's download.
            "bf16_weights_gib": round(self.dims.params() * 2 / GIB, 3),
            "problem": self.problem(),
            "fix": self.fix,
        }


def plan(dims: ModelDims, work: Workload, card: Card) -> MemoryPlan:
    """The plan at these settings, with the one change that makes it fit when it does not."""
    result = _plan(dims, work, card)
    if not result.fits:
        result.fix = _fix(dims, work, card)
    return result


def _plan(dims: ModelDims, work: Workload, card: Card) -> MemoryPlan:
    items, reference = breakdown(dims, work)
    vllm_share = card.gpu_memory_utilization * (card.vllm_card_gib or 0.0)
    vllm_need = vllm_minimum_gib(dims, card.policy_max_model_len)
    if card.free_gib is not None:
        available = card.free_gib + CUDA_CONTEXT_GIB  # measured after the context, which is one of the items
    elif card.policy_shares_card:
        available = card.total_gib - vllm_share
    else:
        available = card.total_gib
    return MemoryPlan(
        dims, work, card, items, reference, vllm_share_gib=vllm_share, vllm_need_gib=vllm_need, available_gib=available
    )


def vllm_minimum_gib(dims: ModelDims, max_model_len: int) -> float:
    """vLLM's bf16 weights, the KV cache of one max_model_len sequence, its working memory."""
    return (dims.params() * 2 + dims.kv_bytes_per_token() * max_model_len) / GIB + VLLM_WORKING_GIB


def _fix(dims: ModelDims, work: Workload, card: Card) -> str:
    """The smallest change that fits: vLLM's share first, then the learner's own settings, then two cards."""
    base = _plan(dims, work, card)
    if not base.vllm_fits:
        if not card.policy_shares_card:
            least = math.ceil(100 * base.vllm_need_gib / (card.vllm_card_gib or card.total_gib)) / 100
            return f"give vLLM's card a larger share: {ENV_UTILIZATION} >= {least:.2f}"
        needed = math.ceil(100 * base.vllm_need_gib / card.total_gib) / 100
        raised = replace(card, gpu_memory_utilization=needed)
        if needed <= 0.95 and _plan(dims, work, raised).fits:
            return f"set {ENV_UTILIZATION}={needed:.2f}"
        return _two_cards(dims, work, card)

    changes: list[tuple[str, Callable[[Workload], Workload]]] = []
    if DTYPE_BYTES[work.dtype] == 4:
        changes.append((f"{ENV_DTYPE}=bfloat16", lambda w: replace(w, dtype="bfloat16")))
    if not work.gradient_checkpointing:
        changes.append((f"{ENV_CHECKPOINTING}=true", lambda w: replace(w, gradient_checkpointing=True)))
    combos = [c for n in range(1, len(changes) + 1) for c in itertools.combinations(changes, n)]

    def applied(chosen: Sequence[tuple[str, Callable[[Workload], Workload]]]) -> Workload:
        trial = work
        for _, change in chosen:
            trial = change(trial)
        return trial

    # The fewest changes that keep the micro-batch, then the largest micro-batch that fits, then
    # a smaller share for vLLM (fewer concurrent rollouts), then another card.
    for chosen in combos:
        if _plan(dims, applied(chosen), card).fits:
            return "set " + " and ".join(name for name, _ in chosen)
    for chosen in [(), *combos]:
        micro = _largest_micro_batch(dims, applied(chosen), card)
        if micro is not None:
            return "set " + " and ".join([*(name for name, _ in chosen), f"{ENV_MICRO_BATCH}={micro}"])
    if card.policy_shares_card:
        lowest = math.ceil(100 * base.vllm_need_gib / card.total_gib) / 100
        lowered = replace(card, gpu_memory_utilization=lowest, free_gib=None)
        if _plan(dims, work, lowered).fits:
            return f"set {ENV_UTILIZATION}={lowest:.2f} (the least that holds vLLM: fewer concurrent rollouts)"
    if card.policy_shares_card:
        return _two_cards(dims, work, card)
    alone = _plan(dims, replace(work, micro_batch_size=1, dtype="bfloat16", gradient_checkpointing=True), card)
    return f"the learner needs {alone.peak_gib:.1f} GiB even at micro-batch 1 in bfloat16 with checkpointing: use a larger card"


def _two_cards(dims: ModelDims, work: Workload, card: Card) -> str:
    alone = replace(
        card, policy_shares_card=False, free_gib=None, gpu_memory_utilization=TWO_CARD_UTILIZATION, policy_card_gib=None
    )
    trial = _plan(dims, work, alone)
    if trial.fits:
        return f"{TWO_CARDS}: the learner then needs {trial.peak_gib:.1f} of {card.total_gib:.1f} GiB"
    micro = _largest_micro_batch(dims, replace(work, dtype="bfloat16", gradient_checkpointing=True), alone)
    if micro is not None:
        return f"{TWO_CARDS}, with {ENV_DTYPE}=bfloat16, {ENV_CHECKPOINTING}=true and {ENV_MICRO_BATCH}={micro}"
    return f"this card ({card.total_gib:.1f} GiB) is too small for the learner even alone: use a larger card"


def _largest_micro_batch(dims: ModelDims, work: Workload, card: Card) -> int | None:
    for micro in range(work.micro_batch_size, 0, -1):
        if _plan(dims, replace(work, micro_batch_size=micro), card).fits:
            return micro
    return None
