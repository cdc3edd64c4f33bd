"""The step-level DPO objective that MCTS preferences train the policy with (Agent Q), in pure torch.

A preference is one browser state (the prompt x: goal, action history, screenshot) and two
candidate actions sampled there, a_w preferred to a_l because the search valued a_w's child at
least ``theta`` higher (``halo_trainer.mcts.tree.Tree.preference_pairs``). With the current
policy's per-token log-probs of each action's completion tokens ``logp`` and the reference's
``logp_ref``, summed over the action's tokens (``m`` is the completion mask)::

    s(a)     = sum_t m_t (logp_t(a) - logp_ref_t(a))              (the implicit reward, over beta)
    h        = s(a_w) - s(a_l)
    loss_i   = -log sigmoid(beta * h_i)  +  rpo_alpha * nll_i
    nll_i    = -sum_t m_t logp_t(a_w) / |a_w|                      (RPO: the chosen action's NLL per token)
    loss     = (1/P) sum_i loss_i                                   over P pairs

Metrics: the implicit rewards ``beta * s(a_w)`` and ``beta * s(a_l)``, their margin, the share of
pairs whose chosen reward is strictly higher (accuracy), and a KL-to-reference estimate, the k3
estimator ``exp(logp_ref - logp) - (logp_ref - logp) - 1`` averaged over both actions' tokens.

How this differs from Agent Q (Putta et al. 2024):

* Pairs weigh the same whatever their Q gap, as in the paper, but the paper leaves beta, alpha and
  theta unreported; here they are settings (``halo.schemas.search_settings``).
* The policy is a vision-language model trained through a LoRA adapter. The reference is either the
  base model (the adapter disabled, no second copy in memory) or the adapter as it was when the
  iteration began, which is the paper's iterative reference ``pi_ref <- pi_theta_i``.
* Log-probs are those of the distribution vLLM sampled from: the learner rebuilds the exact prompt
  token ids and replays the structured-output grammar mask, as for GRPO. The paper's actions are
  free text (plan, thought, command); ours are one tool call.
* An optional NLL term on the chosen action (RPO, Pang et al. 2024), which the paper does not use:
  DPO alone can lower both actions' likelihood while widening their margin (reported by the RPO
  and DPOP papers), and the NLL keeps the chosen action likely. Unlike TRL's ``rpo_alpha`` (a token mean over
  the whole batch) the NLL here is a per-pair token mean, so micro-batches add up exactly.

How it differs from offline DPO (Rafailov et al. 2023): the pairs are not a fixed human-labelled
set of whole responses but one action at one state, produced online by the current policy's own
search and labelled by search and critic values; the reference moves with the iterations instead
of being a fixed SFT model. Summing over all of an action's tokens, rather than only those after
the first token where the two differ (MCTS-DPO, Xie et al. 2024), changes nothing in the preference
term: a shared prefix has the same log-probs in both actions, so it cancels in ``h``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


def action_logprobs(token_logprobs: Tensor, mask: Tensor) -> Tensor:
    """``[P, T]`` per-token log-probs -> ``[P]`` sums over the completion tokens ``mask`` marks.

    Masked positions count as 0 whatever they hold (padding may be garbage, even inf or nan).
    """
    on = mask.bool()
    return torch.where(on, token_logprobs, torch.zeros_like(token_logprobs)).sum(-1)


@dataclass
class DPOStats:
    """Sums over pairs and tokens, so micro-batches merge exactly; ``summary()`` gives the means."""

    pairs: int = 0
    loss_sum: float = 0.0  # the whole loss, preference + rpo_alpha * nll
    preference_loss_sum: float = 0.0
    nll_sum: float = 0.0  # per-token NLL of the chosen action
    correct: float = 0.0  # pairs whose implicit reward is strictly higher for the chosen action
    margin_sum: float = 0.0
    chosen_reward_sum: float = 0.0
    rejected_reward_sum: float = 0.0
    kl_sum: float = 0.0
    tokens: float = 0.0  # completion tokens of both actions

    def merge(self, other: DPOStats) -> DPOStats:
        return DPOStats(**{name: getattr(self, name) + getattr(other, name) for name in self.__dataclass_fields__})

    def summary(self) -> dict[str, float]:
        n = max(self.pairs, 1)
        return {
            "pairs": float(self.pairs),
            "loss": self.loss_sum / n,
            "preference_loss": self.preference_loss_sum / n,
            "nll": self.nll_sum / n,
            "reward_accuracy": self.correct / n,
            "reward_margin": self.margin_sum / n,
            "chosen_reward": self.chosen_reward_sum / n,
            "rejected_reward": self.rejected_reward_sum / n,
            "kl": self.kl_sum / max(self.tokens, 1.0),
            "tokens": self.tokens,
        }


def _check(name: str, logprobs: Tensor, ref: Tensor, mask: Tensor) -> None:
    if logprobs.shape != ref.shape or logprobs.shape != mask.shape or logprobs.dim() != 2:
        raise ValueError(
            f"{name}: log-probs {tuple(logprobs.shape)}, reference {tuple(ref.shape)} and mask "
            f"{tuple(mask.shape)} must be the same [pairs, tokens] shape"
        )
    empty = (mask.bool().sum(-1) == 0).nonzero().flatten().tolist()
    if empty:
        raise ValueError(f"{name}: pairs {empty} have no completion tokens; an action is at least one token")


def _k3(logprobs: Tensor, ref: Tensor, on: Tensor) -> Tensor:
    delta = torch.where(on, ref - logprobs, torch.zeros_like(logprobs))
    return delta.exp() - delta - 1.0


def dpo_loss(
    chosen_logprobs: Tensor,
    rejected_logprobs: Tensor,
    ref_chosen_logprobs: Tensor,
    ref_rejected_logprobs: Tensor,
    chosen_mask: Tensor,
    rejected_mask: Tensor,
    *,
    beta: float = 0.1,
    rpo_alpha: float = 0.0,
    num_pairs: int | None = None,
) -> tuple[Tensor, DPOStats]:
    """The loss of the module docstring over per-token tensors ``[P, T_w]`` (chosen) and ``[P, T_l]``
    (rejected); row i of each is pair i. The reference log-probs carry no gradient.

    ``num_pairs`` is the size of the whole batch when this call sees one micro-batch of it, so that
    summed micro-batch losses equal the full-batch loss.
    """
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    if rpo_alpha < 0:
        raise ValueError(f"rpo_alpha must be >= 0, got {rpo_alpha}")
    _check("chosen", chosen_logprobs, ref_chosen_logprobs, chosen_mask)
    _check("rejected", rejected_logprobs, ref_rejected_logprobs, rejected_mask)
    if chosen_logprobs.shape[0] != rejected_logprobs.shape[0]:
        raise ValueError(f"{chosen_logprobs.shape[0]} chosen actions but {rejected_logprobs.shape[0]} rejected")
    ref_w = ref_chosen_logprobs.detach().to(chosen_logprobs.dtype)
    ref_l = ref_rejected_logprobs.detach().to(rejected_logprobs.dtype)

    logp_w = action_logprobs(chosen_logprobs, chosen_mask)
    logp_l = action_logprobs(rejected_logprobs, rejected_mask)
    s_w = logp_w - action_logprobs(ref_w, chosen_mask)
    s_l = logp_l - action_logprobs(ref_l, rejected_mask)
    preference = -F.logsigmoid(beta * (s_w - s_l))
    nll = -logp_w / chosen_mask.to(logp_w.dtype).sum(-1)
    per_pair = preference + rpo_alpha * nll if rpo_alpha > 0 else preference
    loss = per_pair.sum() / (num_pairs if num_pairs is not None else per_pair.shape[0])

    with torch.no_grad():
        on_w, on_l = chosen_mask.bool(), rejected_mask.bool()
        reward_w, reward_l = beta * s_w, beta * s_l
        kl = _k3(chosen_logprobs, ref_w, on_w)[on_w].sum() + _k3(rejected_logprobs, ref_l, on_l)[on_l].sum()
        stats = DPOStats(
            pairs=int(per_pair.shape[0]),
            loss_sum=float(per_pair.sum()),
            preference_loss_sum=float(preference.sum()),
            nll_sum=float(nll.sum()),
            correct=float((reward_w > reward_l).sum()),
            margin_sum=float((reward_w - reward_l).sum()),
            chosen_reward_sum=float(reward_w.sum()),
            rejected_reward_sum=float(reward_l.sum()),
            kl_sum=float(kl),
            tokens=float(on_w.sum() + on_l.sum()),
        )
    return loss, stats
