"""Per-token log-probs of sampled completions under the weights being trained (with gradients).

One forward pass over a ``PolicyBatch``; the hidden state before each completion token goes
through ``lm_head``; ``log_softmax`` at ``temperature`` (1.0 = vLLM's default ``raw_logprobs``);
gather. Logits are only computed at completion positions (the 8B's vocab is 151k). Tested for
parity with vLLM's behaviour log-probs, with and without an adapter and a grammar
(tests/policy/test_parity.py).

Structured outputs: vLLM applies the grammar's token mask to the logits *before* it computes the
log-probs it returns, so a constrained token's behaviour log-prob is renormalised over the allowed
tokens; pass the replayed masks (``halo_model.grammar.grammar_masks``) as ``allowed=``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from halo_model.inputs import PolicyBatch

if TYPE_CHECKING:
    import torch


def base_model(model: Any) -> Any:
    """The ``Qwen3VLForConditionalGeneration`` (LoRA layers stay injected in a PEFT model)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def completion_logprobs(
    model: Any,
    batch: PolicyBatch,
    *,
    temperature: float = 1.0,
    grad: bool = False,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-token log-probs of the completion tokens: ``[B, C]`` float32, 0 where the mask is False.

    ``temperature=1`` matches vLLM's ``raw_logprobs``. ``allowed`` (``[B, C, V]`` bool, from
    ``grammar_masks``) renormalises over the tokens a structured-output grammar allowed.
    ``grad=True`` keeps the graph (the learner's policy-gradient step).
    """
    import torch

    core = base_model(model)
    context = torch.enable_grad() if grad else torch.no_grad()
    with context:
        hidden = core.model(**batch.model_inputs(), use_cache=False).last_hidden_state  # [B, L, H]
        # The token at position t is predicted by the hidden state at t - 1.
        index = (batch.completion_positions - 1).clamp(min=0)
        picked = torch.gather(hidden, 1, index.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        return token_logprobs(
            core, picked, batch.completion_ids, batch.completion_mask, temperature=temperature, allowed=allowed
        )


def token_logprobs(
    core: Any,
    hidden: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Log-probs ``[B, C]`` of ``completion_ids`` from the hidden states that predict them (``[B, C, H]``):
    one ``lm_head`` call (the learner's entropy metric hooks it), ``temperature``, the grammar's mask."""
    import torch

    logits = core.lm_head(hidden).float()  # [B, C, V]
    if temperature != 1.0:
        logits = logits / temperature
    if allowed is not None:
        logits = logits.masked_fill(~allowed[..., : logits.shape[-1]], float("-inf"))
    logp = torch.log_softmax(logits, dim=-1)
    out = torch.gather(logp, 2, completion_ids.unsqueeze(-1)).squeeze(-1)
    return out.masked_fill(~completion_mask, 0.0)
