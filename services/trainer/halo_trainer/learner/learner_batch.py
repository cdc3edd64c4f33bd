"""The learner's batch and how it is cut and scored (``halo_trainer.learner.learner``): ``LearnerBatch``,
micro-batches that keep a prompt group's rows together (``group_micro_batches``), the log-prob
function's signature (``LogprobFn``) and its call with the entropy read from ``lm_head``'s logits
(``logprobs_and_entropy``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor, nn

from halo_model.grouped import PackedBatch
from halo_model.inputs import PolicyBatch, select_rows
from halo_model.logprobs import base_model
from halo_trainer.learner.objective import entropy_from_logits

# (model, batch, *, temperature, grad, allowed) -> per-completion-token log-probs [B, C], 0 off the mask
LogprobFn = Callable[..., Tensor]
# Positions whose entropy is computed at once (``chunked_entropy``): at Qwen3-VL's vocabulary a chunk's
# float32 copies take ~0.1 GiB, below the two float32 copies of the logits the backward holds.
ENTROPY_CHUNK_TOKENS = 32


def group_micro_batches(groups: Sequence[Sequence[int]], rows: Sequence[int], size: int) -> list[list[int]]:
    """``rows`` in micro-batches of at most ``size`` that keep the rows of a prompt group together:
    whole groups while they fit, a group larger than ``size`` in chunks of ``size``. A group split
    across two micro-batches would pay its prompt pass twice."""
    wanted = set(rows)
    out: list[list[int]] = []
    current: list[int] = []
    for group in groups:
        members = [r for r in group if r in wanted]
        for start in range(0, len(members), size):
            chunk = members[start : start + size]
            if len(current) + len(chunk) > size:
                out.append(sorted(current))
                current = []
            current += chunk
    if current:
        out.append(sorted(current))
    return out


@dataclass
class LearnerBatch:
    """A batch of completions to learn from, one row each (often one group or a few groups).

    ``behaviour_logprobs[i, j]`` is the log-prob vLLM reported for completion token ``j`` of row
    ``i`` (``Transition.behaviour_logprobs``, right-padded like ``inputs.completion_ids``); without
    it the learner's own detached log-probs stand in (ratio 1). ``allowed`` is the structured-output
    mask of ``halo_model.grammar.grammar_masks`` when vLLM sampled under a grammar.
    """

    inputs: PolicyBatch | PackedBatch  # packed: one micro-batch on its way to the device
    advantages: Tensor  # [B]
    behaviour_logprobs: Tensor | None = None  # [B, C]
    allowed: Tensor | None = None  # [B, C, V] bool

    def __len__(self) -> int:
        return self.inputs.input_ids.shape[0]

    def to(self, device: torch.device | str) -> LearnerBatch:
        return LearnerBatch(
            inputs=self.inputs.to(device),
            advantages=self.advantages.to(device),
            behaviour_logprobs=None if self.behaviour_logprobs is None else self.behaviour_logprobs.to(device),
            allowed=None if self.allowed is None else self.allowed.to(device),
        )

    def select(self, rows: Sequence[int], spatial_merge_size: int) -> LearnerBatch:
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.advantages.device)
        return replace(
            self,
            inputs=select_rows(self.inputs, rows, spatial_merge_size),
            advantages=self.advantages[index],
            behaviour_logprobs=None if self.behaviour_logprobs is None else self.behaviour_logprobs[index],
            allowed=None if self.allowed is None else self.allowed[index],
        )


def _lm_head(model: nn.Module) -> nn.Module | None:
    return getattr(base_model(model), "lm_head", None)


def logprobs_and_entropy(
    logprob_fn: LogprobFn, model: nn.Module, batch: LearnerBatch, *, grad: bool, temperature: float = 1.0
) -> tuple[Tensor, Tensor | None]:
    """``logprob_fn``'s log-probs ``[B, C]`` and the entropy of each predicted distribution (no grad).

    The entropy comes from the logits ``logprob_fn`` already computes (captured at ``lm_head``, before
    the temperature, which is applied here as ``logprob_fn`` applies it), with the same
    structured-output mask; None if the function does not go through ``lm_head``.
    """
    captured: list[Tensor] = []
    head = _lm_head(model)
    hook = head.register_forward_hook(lambda _m, _i, out: captured.append(out.detach())) if head is not None else None
    try:
        logp = logprob_fn(model, batch.inputs, grad=grad, allowed=batch.allowed)
    finally:
        if hook is not None:
            hook.remove()
    entropy = None
    if len(captured) == 1 and captured[0].shape[:2] == logp.shape:
        entropy = chunked_entropy(captured[0], temperature, batch.allowed)
    return logp, entropy


def chunked_entropy(logits: Tensor, temperature: float, allowed: Tensor | None) -> Tensor:
    """``entropy_from_logits`` of ``logits[B, C, V]`` at ``temperature`` under the grammar's mask,
    ``ENTROPY_CHUNK_TOKENS`` positions at a time: each position's entropy is computed as before, but
    the float32 copies it needs (five of them at the full vocabulary) exist for one chunk only. At
    full size they came on top of the log-softmax the backward keeps, and made the step's peak
    (25 bytes per vocabulary entry per completion token at temperature 0.7, against the 14 of the
    backward the memory plan counts; tests/trainer/learner/test_entropy_peak.py)."""
    rows, width = logits.shape[:2]
    out = torch.empty((rows, width), dtype=torch.float32, device=logits.device)
    for row in range(rows):
        for start in range(0, width, ENTROPY_CHUNK_TOKENS):
            part = logits[row, start : start + ENTROPY_CHUNK_TOKENS]
            if temperature != 1.0:
                part = part / temperature
            if allowed is not None:
                mask = allowed[row, start : start + ENTROPY_CHUNK_TOKENS, : part.shape[-1]]
                part = part.masked_fill(~mask, float("-inf"))
            out[row, start : start + ENTROPY_CHUNK_TOKENS] = entropy_from_logits(part)
    return out
