"""The policy objective of online GRPO as this project runs it (``advantage="dr_grpo"``,
``loss_norm="constant"``), in pure torch.

For a group of G completions o_1..o_G answering the same prompt (step groups: G actions sampled at
one browser state and executed in G forks of it; episode groups: G episodes of one task), with
rewards r_i, sampled token ids o_i,t, current log-probs ``logp = log pi_theta(o_i,t | ...)``, the
log-probs the sampler reported when it drew the token ``logp_b`` and those of the frozen base model
``logp_ref``::

    A_i      = r_i - mean(r)                                     (advantage dr_grpo)
             = (r_i - mean(r)) / (std(r) + eps)                  (grpo)
             = r_i - mean_{j != i} r_j = G/(G-1) (r_i - mean(r))  (rloo)
             = (r_i - mean(r)) / std_batch(r - mean(r))          (reinforce_pp_baseline)
    rho_i,t  = exp(logp_i,t - logp_b_i,t)                        (importance_level token)
             = exp(mean_u m_i,u (logp_i,u - logp_b_i,u))         (sequence: GSPO)
    pg_i,t   = -min(rho_i,t * A_i, clip(rho_i,t, 1 - eps_low, 1 + eps_high) * A_i)
    kl_i,t   = exp(logp_ref_i,t - logp_i,t) - (logp_ref_i,t - logp_i,t) - 1      (k3 estimator)
    loss     = sum_i sum_t m_i,t (pg_i,t + kl_coef * kl_i,t) / (T_max * G)      (loss_norm constant)
             = (1/G) sum_i [sum_t m_i,t (pg_i,t + kl_coef * kl_i,t) / |o_i|]     (sequence)

where m is the completion mask and T_max a constant (the sampler's ``max_tokens``).

How this differs from textbook GRPO (DeepSeekMath, Shao et al. 2024):

* No division by the group's standard deviation (Dr. GRPO, Liu et al. 2025). Dividing by std
  up-weights groups whose rewards barely differ (nearly solved or nearly hopeless prompts), a
  difficulty bias; without it the advantage is in reward units. ``grpo`` keeps the division
  (unbiased std, as TRL computes it) as the standard alternative.
* The advantage estimator and the normaliser are two choices (TRL's ``scale_rewards`` and
  ``loss_type``), each a table entry below: ``ESTIMATORS`` and ``NORMALISERS``. RLOO (Ahmadian et
  al. 2024, "Back to Basics") is the leave-one-out baseline: each completion is compared with the
  mean of the others, an unbiased baseline that is G/(G-1) times Dr. GRPO's advantage.
* REINFORCE++-baseline (Hu 2025, "REINFORCE++", arXiv:2501.03262; OpenRLHF's
  ``reinforce_baseline``) keeps the group's mean as the baseline but divides by the standard
  deviation of the centred rewards over the whole update's batch, so the step size is independent
  of the reward's scale without grpo's per-group difficulty bias. It is the one estimator that
  needs the batch: every estimator takes one update's groups (``Estimator``), the others look at
  one group at a time.
* The importance ratio's level is a third table, ``RATIOS``. ``sequence`` is GSPO (Zheng et al.
  2025, "Group Sequence Policy Optimization", arXiv:2507.18071; TRL's
  ``importance_sampling_level="sequence"``): one ratio per completion, the geometric mean of its
  tokens' ratios, clipped per completion, since the reward is one per completion too; token ratios
  add per-token noise that the clip then acts on. Its clip range is far narrower (GSPO uses eps
  3e-4 / 4e-4). With one advantage per completion GSPO-token (``sg[s_i] pi / sg[pi]``) has the
  same value and gradient, so it is no separate entry.
* A constant normaliser instead of each sequence's own length. GRPO's ``1/|o_i|`` gives the tokens
  of a short completion more weight than those of a long one, so long wrong answers are penalised
  less per token (a length bias). Here every token of every completion weighs the same.
* A group whose rewards are all equal gets exactly zero advantage (forced to 0.0, not left to float
  rounding of ``r - mean(r)``), so it contributes nothing but its share of the normaliser; the
  learner skips its forward pass when ``kl_coef == 0``.
* The importance ratio uses the behaviour log-probs recorded by vLLM at sampling time rather than a
  re-computation under "theta_old". Rollouts may come from an older adapter version than the one
  being trained (asynchronous workers), so the ratio is the importance weight against the policy
  that actually acted; the trainer drops transitions staler than its limit and the clip bounds the
  rest. The gap between vLLM's and the learner's log-probs is reported as a metric. Without
  behaviour log-probs the learner passes its own detached log-probs: with one pass over a batch the
  ratio is then exactly 1 and the gradient is the plain policy gradient ``-A_i grad logp_i,t``.
* Truncated importance sampling (``tis_cap``; Yao et al. 2025, "Your efficient RL framework secretly
  brings you off-policy RL training"; verl's ``tis_imp_ratio_cap``). vLLM and the learner are two
  implementations of the policy (kernels, dtype: bfloat16 on the GPU), so even with the same weights
  pi_vLLM != pi_learner, and the ratio against vLLM's log-probs mixes that mismatch into the PPO
  trust region: a token whose ratio the mismatch pushes past 1 +- eps loses its gradient, one with
  a negative advantage and a large ratio gets an unbounded one. With a cap C the objective is
  decoupled::

      w_i,t    = min(exp(logp_old_i,t - logp_b_i,t), C)              (no gradient)
      rho_i,t  = exp(logp_i,t - logp_old_i,t)
      pg_i,t   = -w_i,t * min(rho_i,t * A_i, clip(rho_i,t, 1 - eps_low, 1 + eps_high) * A_i)

  where ``logp_old`` are the learner's log-probs before the optimiser step: with one step per batch
  they are ``logp`` detached (``RunConfig`` refuses ``tis_cap`` with several passes), rho is 1 and
  the gradient is ``-w A grad logp``, the policy gradient importance-weighted towards vLLM's
  samples with the weight truncated (bias for bounded variance). Staleness (a rollout from an older
  adapter) is in w too. Without a cap (``tis_cap=None``) the objective is the coupled one above.
  The importance level applies to w as to rho: at ``sequence`` level w_i is the completion's
  geometric-mean ratio to vLLM, truncated (TRL's own vLLM correction is a separate setting).
* The KL term is 0 by default (Dr. GRPO drops it); when used it is the same k3 estimator as
  DeepSeekMath's, against the base model (the LoRA adapter disabled) rather than an SFT copy.

How it differs from PPO (Schulman et al. 2017, as used for RLHF): no value function and no GAE; the
baseline is the mean reward of the group; the KL to the reference is a loss term, not a per-token
penalty folded into the reward; each sampled batch is normally used for one optimiser step, so the
clip only acts when a batch is reused or its rollouts are stale.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from halo.schemas.choices import Advantage, ImportanceLevel, LossNorm


def _dr_grpo(rewards: Tensor, eps: float) -> Tensor:
    return rewards - rewards.mean(dim=-1, keepdim=True)


def _grpo(rewards: Tensor, eps: float) -> Tensor:
    return _dr_grpo(rewards, eps) / (rewards.std(dim=-1, keepdim=True) + eps)  # unbiased std, as TRL


def _rloo(rewards: Tensor, eps: float) -> Tensor:
    others = (rewards.sum(dim=-1, keepdim=True) - rewards) / (rewards.shape[-1] - 1)
    return rewards - others


# One update's groups, rewards[..., G_k] each (G_k >= 2) -> their advantages, same shapes. Most
# estimators look at one group at a time (``_each_group``); REINFORCE++'s needs the whole batch.
Estimator = Callable[[list[Tensor], float], list[Tensor]]


def _each_group(estimator: Callable[[Tensor, float], Tensor]) -> Estimator:
    """An estimator that looks at one group at a time, applied to every group of the batch."""
    return lambda groups, eps: [estimator(rewards, eps) for rewards in groups]


def _reinforce_pp_baseline(groups: list[Tensor], eps: float) -> list[Tensor]:
    # The group's mean is the baseline, the batch's spread the scale: a group whose rewards barely
    # differ keeps small advantages (no difficulty bias, unlike grpo), yet the step size does not
    # depend on the reward's units. Population std over completions, floored at eps, as OpenRLHF.
    centred = [_dr_grpo(rewards, eps) for rewards in groups]
    every = torch.cat([c.flatten() for c in centred])
    scale = every.pow(2).mean().clamp(min=eps * eps).rsqrt()  # the batch mean of r - mean(r) is 0
    return [c * scale for c in centred]


# The advantage estimators. A new one is an entry here and a value of
# halo.schemas.choices.Advantage (docs/trainer.md, "Adding an algorithm").
ESTIMATORS: dict[Advantage, Estimator] = {
    Advantage.DR_GRPO: _each_group(_dr_grpo),
    Advantage.GRPO: _each_group(_grpo),
    Advantage.RLOO: _each_group(_rloo),
    Advantage.REINFORCE_PP_BASELINE: _reinforce_pp_baseline,
}

# The loss normalisers: masked per-token losses [B, T] -> each sequence's share [B] (before / G).
NORMALISERS: dict[LossNorm, Callable[[Tensor, Tensor, int], Tensor]] = {
    LossNorm.CONSTANT: lambda losses, mask, max_tokens: losses.sum(-1) / max_tokens,
    LossNorm.SEQUENCE: lambda losses, mask, max_tokens: losses.sum(-1) / mask.sum(-1).clamp(min=1.0),
}


def _sequence_log_ratio(log_ratio: Tensor, mask: Tensor) -> Tensor:
    # GSPO's s_i = exp(mean_t log-ratio), laid on every token of the sequence so that the clip, the
    # TIS weight and the normalisers stay per-token code. Its gradient reaches each token through
    # the mean: d s_i / d logp_i,t = s_i / |o_i|, GSPO's (and, with one advantage per completion,
    # GSPO-token's: sg[s_i] * pi / sg[pi] has the same value and gradient).
    mean = (log_ratio * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1.0)
    return mean.expand_as(log_ratio)


# The importance-ratio levels: per-token log-ratios [B, T] and the mask -> the log of each token's
# ratio [B, T]. A new one is an entry here and a value of halo.schemas.choices.ImportanceLevel.
RATIOS: dict[ImportanceLevel, Callable[[Tensor, Tensor], Tensor]] = {
    ImportanceLevel.TOKEN: lambda log_ratio, mask: log_ratio,
    ImportanceLevel.SEQUENCE: _sequence_log_ratio,
}


def batch_advantages(
    groups: Sequence[Tensor], advantage: Advantage | str = Advantage.DR_GRPO, eps: float = 1e-4
) -> list[Tensor]:
    """Advantages of one update's groups, each ``rewards[..., G_k] -> A[..., G_k]``.

    A group of one, or one whose rewards are all equal, gets exactly zero advantage; a group of
    one has no baseline, so a batch-level estimator does not see it either.
    """
    estimator = ESTIMATORS[Advantage(advantage)]
    groups = [r.to(torch.float32) if not r.is_floating_point() else r for r in groups]
    out = [torch.zeros_like(r) for r in groups]
    scored = [i for i, r in enumerate(groups) if r.shape[-1] >= 2]
    if not scored:
        return out
    for i, centred in zip(scored, estimator([groups[i] for i in scored], eps), strict=True):
        rewards = groups[i]
        flat = rewards.amax(dim=-1, keepdim=True) == rewards.amin(dim=-1, keepdim=True)
        out[i] = torch.where(flat, torch.zeros_like(centred), centred)
    return out


def group_advantages(rewards: Tensor, advantage: Advantage | str = Advantage.DR_GRPO, eps: float = 1e-4) -> Tensor:
    """Advantages for groups laid along the last dimension: ``rewards[..., G] -> A[..., G]``; the
    groups along the leading dimensions are one batch (for a batch-level estimator).

    A group of one, or one whose rewards are all equal, gets exactly zero advantage.
    """
    return batch_advantages([rewards], advantage, eps)[0]


def advantages_by_group(
    rewards: Sequence[float],
    group_ids: Sequence[Hashable],
    advantage: Advantage | str = Advantage.DR_GRPO,
    eps: float = 1e-4,
) -> Tensor:
    """Advantages for a flat batch whose groups may differ in size (a group loses members to infra errors)."""
    if len(rewards) != len(group_ids):
        raise ValueError(f"{len(rewards)} rewards but {len(group_ids)} group ids")
    out = torch.zeros(len(rewards), dtype=torch.float32)
    members: dict[Hashable, list[int]] = {}
    for index, group in enumerate(group_ids):
        members.setdefault(group, []).append(index)
    groups = [torch.tensor([rewards[i] for i in index], dtype=torch.float32) for index in members.values()]
    for index, adv in zip(members.values(), batch_advantages(groups, advantage, eps), strict=True):
        out[index] = adv
    return out


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of each distribution ``logits[..., V]`` in nats, float32, without grad (a metric)."""
    with torch.no_grad():
        logp_all = logits.float().log_softmax(dim=-1)
        probs = logp_all.exp()
        # 0 * log 0 = 0 for tokens with probability 0 (masked logits), not nan
        return -(probs * logp_all.masked_fill(probs == 0, 0.0)).sum(dim=-1)


def token_logprobs_and_entropy(
    logits: Tensor, tokens: Tensor, with_entropy: bool = True
) -> tuple[Tensor, Tensor | None]:
    """Log-prob of each token under ``logits[..., V]`` (in float32) and the distribution's entropy (no grad)."""
    logp = logits.float().log_softmax(dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    return logp, (entropy_from_logits(logits) if with_entropy else None)


@dataclass
class LossStats:
    """Sums over completion tokens, so micro-batches merge exactly; ``summary()`` gives the means."""

    tokens: float = 0.0
    sequences: int = 0
    kl_sum: float = 0.0
    entropy_sum: float = 0.0
    entropy_tokens: float = 0.0
    ratio_sum: float = 0.0
    ratio_min: float = float("inf")
    ratio_max: float = float("-inf")
    clipped_tokens: float = 0.0
    logprob_gap_sum: float = 0.0  # |logp - logp_b|: sampler/learner mismatch plus staleness
    truncated_tokens: float = 0.0  # tokens whose importance weight the TIS cap lowered

    def merge(self, other: LossStats) -> LossStats:
        return LossStats(
            tokens=self.tokens + other.tokens,
            sequences=self.sequences + other.sequences,
            kl_sum=self.kl_sum + other.kl_sum,
            entropy_sum=self.entropy_sum + other.entropy_sum,
            entropy_tokens=self.entropy_tokens + other.entropy_tokens,
            ratio_sum=self.ratio_sum + other.ratio_sum,
            ratio_min=min(self.ratio_min, other.ratio_min),
            ratio_max=max(self.ratio_max, other.ratio_max),
            clipped_tokens=self.clipped_tokens + other.clipped_tokens,
            logprob_gap_sum=self.logprob_gap_sum + other.logprob_gap_sum,
            truncated_tokens=self.truncated_tokens + other.truncated_tokens,
        )

    def summary(self) -> dict[str, float]:
        n = max(self.tokens, 1.0)
        return {
            "tokens": self.tokens,
            "sequences": float(self.sequences),
            "kl": self.kl_sum / n,
            "entropy": self.entropy_sum / max(self.entropy_tokens, 1.0),
            "ratio_mean": self.ratio_sum / n if self.tokens else 1.0,
            "ratio_min": self.ratio_min if self.tokens else 1.0,
            "ratio_max": self.ratio_max if self.tokens else 1.0,
            "clip_frac": self.clipped_tokens / n,
            "behaviour_logprob_gap": self.logprob_gap_sum / n,
            "tis_frac": self.truncated_tokens / n,
        }


def policy_loss(
    logprobs: Tensor,
    behaviour_logprobs: Tensor,
    advantages: Tensor,
    completion_mask: Tensor,
    *,
    ref_logprobs: Tensor | None = None,
    entropy: Tensor | None = None,
    loss_norm: LossNorm | str = LossNorm.CONSTANT,
    clip_eps_low: float | None = 0.2,
    clip_eps_high: float | None = 0.2,
    kl_coef: float = 0.0,
    max_completion_tokens: int | None = None,
    num_sequences: int | None = None,
    tis_cap: float | None = None,
    old_logprobs: Tensor | None = None,
    importance_level: ImportanceLevel | str = ImportanceLevel.TOKEN,
) -> tuple[Tensor, LossStats]:
    """The loss of the module docstring over per-token tensors ``[B, T]`` and ``advantages[B]``.

    ``tis_cap``: truncated importance sampling against ``behaviour_logprobs``, the PPO ratio then
    against ``old_logprobs`` (default: ``logprobs`` detached, the learner before this step).
    The ``ratio_*`` statistics are the importance ratio against vLLM in both forms.
    ``importance_level``: what one ratio covers (``RATIOS``), for the PPO ratio and the TIS weight alike.

    Only positions where ``completion_mask`` is set count; values elsewhere (padding, prompt) are
    ignored, whatever they hold. ``max_completion_tokens`` is Dr. GRPO's constant (default: T).
    ``num_sequences`` is the size of the whole batch when this call sees one micro-batch of it, so
    that summed micro-batch losses equal the full-batch loss.
    """
    loss_norm = LossNorm(loss_norm)
    level = RATIOS[ImportanceLevel(importance_level)]
    if logprobs.shape != behaviour_logprobs.shape or logprobs.shape != completion_mask.shape:
        raise ValueError(
            f"shape mismatch: logprobs {tuple(logprobs.shape)}, behaviour {tuple(behaviour_logprobs.shape)}, "
            f"mask {tuple(completion_mask.shape)}"
        )
    if kl_coef > 0 and ref_logprobs is None:
        raise ValueError("kl_coef > 0 needs ref_logprobs")
    mask = completion_mask.to(logprobs.dtype)
    on = completion_mask.bool()
    adv = advantages.to(logprobs.dtype).unsqueeze(-1)

    if tis_cap is not None and tis_cap < 1.0:
        raise ValueError(f"tis_cap={tis_cap}: a cap below 1 would down-weight on-policy tokens")
    zeros = torch.zeros_like(logprobs)
    # Masked positions get log-ratio 0 so garbage there cannot produce inf * 0 = nan.
    log_ratio = torch.where(on, logprobs - behaviour_logprobs.to(logprobs.dtype), zeros)
    weight = None
    truncated = torch.zeros_like(on)
    # The level applies to every ratio: at sequence level (GSPO) the TIS weight is the sequence's
    # geometric-mean ratio to vLLM, truncated, so no single token's mismatch re-enters the weight.
    if tis_cap is None:
        ratio = level(log_ratio, mask).exp()
        behaviour_ratio = ratio
    else:
        old = logprobs.detach() if old_logprobs is None else old_logprobs.to(logprobs.dtype)
        behaviour_log_ratio = torch.where(on, old - behaviour_logprobs.to(logprobs.dtype), zeros)
        behaviour_ratio = level(behaviour_log_ratio, mask).exp().detach()
        weight = behaviour_ratio.clamp(max=tis_cap)
        truncated = behaviour_ratio > tis_cap
        ratio = level(torch.where(on, logprobs - old, zeros), mask).exp()
    unclipped = ratio * adv
    if clip_eps_low is None and clip_eps_high is None:
        surrogate = unclipped
        clipped = torch.zeros_like(on)
    else:
        low = None if clip_eps_low is None else 1.0 - clip_eps_low
        high = None if clip_eps_high is None else 1.0 + clip_eps_high
        surrogate = torch.minimum(unclipped, torch.clamp(ratio, min=low, max=high) * adv)
        # Tokens whose gradient the clip switched off.
        clipped = torch.zeros_like(on)
        if low is not None:
            clipped |= (ratio < low) & (adv < 0)
        if high is not None:
            clipped |= (ratio > high) & (adv > 0)
    per_token = -surrogate if weight is None else -weight * surrogate

    kl = None
    if ref_logprobs is not None:
        delta = torch.where(on, ref_logprobs.to(logprobs.dtype) - logprobs, torch.zeros_like(logprobs))
        kl = delta.exp() - delta - 1.0
        if kl_coef > 0:
            per_token = per_token + kl_coef * kl

    n_seq = num_sequences if num_sequences is not None else logprobs.shape[0]
    constant = max_completion_tokens if max_completion_tokens is not None else logprobs.shape[-1]
    loss = NORMALISERS[loss_norm](per_token * mask, mask, constant).sum() / n_seq

    with torch.no_grad():
        tokens = float(mask.sum())
        ratio_on = behaviour_ratio[on]
        stats = LossStats(
            tokens=tokens,
            sequences=int(logprobs.shape[0]),
            kl_sum=float((kl * mask).sum()) if kl is not None else 0.0,
            entropy_sum=float((entropy * mask).sum()) if entropy is not None else 0.0,
            entropy_tokens=tokens if entropy is not None else 0.0,
            ratio_sum=float(ratio_on.sum()),
            ratio_min=float(ratio_on.min()) if ratio_on.numel() else float("inf"),
            ratio_max=float(ratio_on.max()) if ratio_on.numel() else float("-inf"),
            clipped_tokens=float((clipped & on).sum()),
            logprob_gap_sum=float(log_ratio.abs()[on].sum()),
            truncated_tokens=float((truncated & on).sum()),
        )
    return loss, stats
