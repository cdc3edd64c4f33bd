"""Step-level DPO as a learner objective (``dpo_update``; the loss is ``halo_trainer.learner.dpo``):
a loss over one micro-batch of preference pairs, given to the learner's public ``optimise`` with its
``micro_batches`` and ``packed``, so a DPO step trains the same parameters with the same optimiser,
the same micro-batching and the same sharing over ranks as a GRPO update. The learner does not know
DPO: this module imports the learner's type, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from halo_trainer.learner.dpo import DPOStats, dpo_loss
from halo_trainer.learner.learner_batch import LearnerBatch

if TYPE_CHECKING:
    from halo_trainer.learner.learner import Learner


def _to(tensor: Tensor | None, device: torch.device) -> Tensor | None:
    return None if tensor is None else tensor.to(device)


def _joined_allowed(batches: Sequence[LearnerBatch], width: int) -> Tensor | None:
    """The batches' structured-output masks stacked row after row at ``width`` (on the CPU); True (no
    mask) where a batch has none and on the padding."""
    masks = [b.allowed for b in batches if b.allowed is not None]
    if not masks:
        return None
    vocab = max(m.shape[-1] for m in masks)
    parts = []
    for b in batches:
        mask = torch.ones((len(b), width, vocab), dtype=torch.bool)
        if b.allowed is not None:
            mask[:, : b.allowed.shape[1], : b.allowed.shape[2]] = b.allowed.cpu()
        parts.append(mask)
    return torch.cat(parts)


def dpo_update(
    learner: Learner,
    chosen: LearnerBatch,
    rejected: LearnerBatch,
    ref_chosen: Tensor,
    ref_rejected: Tensor,
    *,
    beta: float,
    rpo_alpha: float = 0.0,
) -> dict[str, float]:
    """One optimiser step of step-level DPO (``halo_trainer.learner.dpo``) on preference pairs: row i of
    ``chosen`` and of ``rejected`` is pair i's two actions at the same prompt; ``ref_*`` are the
    reference's per-token log-probs of those rows (``Learner.logprobs``), computed before the step.
    Returns ``dpo/*`` metrics."""
    if len(chosen) != len(rejected) or len(chosen) == 0:
        raise ValueError(f"{len(chosen)} chosen and {len(rejected)} rejected actions: need the same, at least 1")
    n = len(chosen)
    device = learner.device

    def loss_of(rows: list[int]) -> tuple[Tensor, DPOStats]:
        micro_w, micro_l = chosen.select(rows, learner.merge_size), rejected.select(rows, learner.merge_size)
        logp_w, logp_l = _pair_logprobs(learner, micro_w, micro_l)
        mask_w = micro_w.inputs.completion_mask.to(device)
        mask_l = micro_l.inputs.completion_mask.to(device)
        ref_w = ref_chosen[rows][:, : mask_w.shape[1]].to(device)
        ref_l = ref_rejected[rows][:, : mask_l.shape[1]].to(device)
        return dpo_loss(logp_w, logp_l, ref_w, ref_l, mask_w, mask_l, beta=beta, rpo_alpha=rpo_alpha, num_pairs=n)

    # The pairs' micro-batches are cut on the chosen side: row i of both sides is one pair, one prompt.
    stats, _, grad_norm, lr = learner.optimise(learner.micro_batches(chosen.inputs, range(n)), loss_of, DPOStats())
    return {f"dpo/{k}": v for k, v in stats.summary().items()} | {
        "dpo/grad_norm": grad_norm,
        "dpo/lr": lr,
        "train/step": float(learner.step),
    }


def _pair_logprobs(learner: Learner, chosen: LearnerBatch, rejected: LearnerBatch) -> tuple[Tensor, Tensor]:
    """Log-probs (with grad) of a micro-batch of pairs' chosen and rejected rows: on the grouped path
    one packed forward, so a state's prompt is scored once for both of its actions (and an action
    both sides share, once)."""
    device = learner.device
    if not learner.packs_prompts:
        return tuple(
            learner.logprob_fn(learner.model, m.inputs.to(device), grad=True, allowed=_to(m.allowed, device))
            for m in (chosen, rejected)
        )
    width_w = chosen.inputs.completion_ids.shape[1]
    width_l = rejected.inputs.completion_ids.shape[1]
    allowed = _joined_allowed([chosen, rejected], max(width_w, width_l))
    logp = learner.logprob_fn(
        learner.model,
        learner.packed(chosen.inputs, rejected.inputs).to(device),
        grad=True,
        allowed=_to(allowed, device),
    )
    n = len(chosen)
    return logp[:n, :width_w], logp[n:, :width_l]
