"""GSPO's sequence-level importance ratio (``importance_level="sequence"``) against TRL's code."""

from __future__ import annotations

import math

import pytest
import torch

from halo_trainer.learner.objective import policy_loss


def trl_loss(
    per_token_logps: torch.Tensor,
    old_per_token_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    level: str,
    loss_type: str,
    epsilon_low: float,
    epsilon_high: float,
    max_completion_length: int,
) -> torch.Tensor:
    """TRL v1.9.0 (commit f2cd577, ``trl/trainer/grpo_trainer.py``, ``GRPOTrainer._compute_loss``)
    written out for ``beta=0``, ``delta=None``, no entropy mask and no vLLM importance correction:
    ``old_per_token_logps`` is the policy that sampled, as our behaviour log-probs are."""
    advantages = advantages.unsqueeze(1)
    log_ratio = per_token_logps - old_per_token_logps
    if level == "token":
        log_importance_weights = log_ratio
    elif level == "sequence":
        log_importance_weights = (log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
        log_importance_weights = log_importance_weights.unsqueeze(-1)
    coef_1 = torch.exp(log_importance_weights)
    coef_2 = torch.clamp(coef_1, 1 - epsilon_low, 1 + epsilon_high)
    per_token_loss = -torch.min(coef_1 * advantages, coef_2 * advantages)
    if loss_type == "grpo":
        return ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    assert loss_type == "dr_grpo"
    return (per_token_loss * mask).sum() / (per_token_loss.size(0) * max_completion_length)


OURS = {"grpo": "sequence", "dr_grpo": "constant"}  # TRL's loss_type -> our loss_norm


def case(noise: float, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Six completions of lengths 1..6 in a width of 7, behaviour log-probs ``noise`` nats off."""
    g = torch.Generator().manual_seed(seed)
    behaviour = -torch.rand(6, 7, generator=g, dtype=torch.float64) * 3
    logp = behaviour + noise * torch.randn(6, 7, generator=g, dtype=torch.float64)
    mask = (torch.arange(7) < torch.arange(1, 7).unsqueeze(-1)).to(torch.float64)
    advantages = torch.tensor([1.0, -0.5, 0.25, -1.0, 0.75, -0.25], dtype=torch.float64)
    return logp, behaviour, advantages, mask


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo"])
@pytest.mark.parametrize(
    ("noise", "eps_low", "eps_high", "clipped"),
    [(1e-5, 3e-4, 4e-4, False), (0.05, 3e-4, 4e-4, True), (0.05, 0.2, 0.2, False)],
)
def test_sequence_level_equals_trls_gspo(
    loss_type: str, noise: float, eps_low: float, eps_high: float, clipped: bool
) -> None:
    logp, behaviour, adv, mask = case(noise)
    ours_leaf, trl_leaf = logp.clone().requires_grad_(), logp.clone().requires_grad_()
    ours, stats = policy_loss(
        ours_leaf,
        behaviour,
        adv,
        mask,
        loss_norm=OURS[loss_type],
        clip_eps_low=eps_low,
        clip_eps_high=eps_high,
        max_completion_tokens=7,
        importance_level="sequence",
    )
    trl = trl_loss(
        trl_leaf,
        behaviour,
        adv,
        mask,
        level="sequence",
        loss_type=loss_type,
        epsilon_low=eps_low,
        epsilon_high=eps_high,
        max_completion_length=7,
    )
    assert ours.item() == pytest.approx(trl.item(), abs=1e-6)
    ours.backward()
    trl.backward()
    assert torch.allclose(ours_leaf.grad, trl_leaf.grad, atol=1e-6, rtol=0)
    # The clip acts per completion: a clipped one has every token clipped, and no gradient.
    seq_ratio = ((logp - behaviour) * mask).sum(-1).div(mask.sum(-1)).exp()
    switched_off = ((seq_ratio < 1 - eps_low) & (adv < 0)) | ((seq_ratio > 1 + eps_high) & (adv > 0))
    assert stats.clipped_tokens == float((mask.sum(-1) * switched_off).sum())
    assert (stats.clipped_tokens > 0) is clipped
    assert stats.ratio_min == pytest.approx(float(seq_ratio.min())) and stats.ratio_max == pytest.approx(
        float(seq_ratio.max())
    )


def test_token_level_equals_trls_and_is_the_default() -> None:
    logp, behaviour, adv, mask = case(0.3, seed=1)
    trl = trl_loss(
        logp, behaviour, adv, mask, level="token", loss_type="dr_grpo", epsilon_low=0.2, epsilon_high=0.28,
        max_completion_length=7,
    )  # fmt: skip
    default, _ = policy_loss(logp, behaviour, adv, mask, clip_eps_low=0.2, clip_eps_high=0.28, max_completion_tokens=7)
    token, _ = policy_loss(
        logp, behaviour, adv, mask, clip_eps_low=0.2, clip_eps_high=0.28, max_completion_tokens=7,
        importance_level="token",
    )  # fmt: skip
    assert default.item() == pytest.approx(trl.item(), abs=1e-12) and token.item() == default.item()


def test_sequence_level_tis_weight_is_the_completions_geometric_mean_truncated() -> None:
    # Completion 0: tokens 3x and 1/3x vLLM's probability: per token the first would be truncated at
    # the cap 2, per completion the geometric mean is 1 and nothing is. Completion 1: both tokens 3x:
    # the mean 3 is truncated at 2. One pass (old = logp detached): the PPO ratio is 1.
    logp = torch.tensor([[-1.0, -2.0], [-1.0, -2.0]], dtype=torch.float64, requires_grad=True)
    log3 = math.log(3.0)
    behaviour = logp.detach() - torch.tensor([[log3, -log3], [log3, log3]], dtype=torch.float64)
    adv = torch.tensor([1.0, 1.0], dtype=torch.float64)
    loss, stats = policy_loss(
        logp, behaviour, adv, torch.ones(2, 2), loss_norm="sequence", tis_cap=2.0, importance_level="sequence"
    )
    # Each completion's loss is -w_i * A_i; its gradient -w_i * A_i / |o_i| on each token, then / G.
    assert loss.item() == pytest.approx(-(1.0 + 2.0) / 2)
    loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[-0.25, -0.25], [-0.5, -0.5]], dtype=torch.float64))
    assert stats.truncated_tokens == 2 and stats.ratio_max == pytest.approx(3.0)
    assert stats.ratio_min == pytest.approx(1.0)


def test_a_completion_without_tokens_has_ratio_one_and_no_loss() -> None:
    logp = torch.tensor([[-1.0, -5.0], [-2.0, float("nan")]], dtype=torch.float64, requires_grad=True)
    behaviour = torch.tensor([[-1.5, float("nan")], [-2.0, -2.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 0], [0, 0]])
    loss, stats = policy_loss(logp, behaviour, torch.tensor([1.0, 1.0]), mask, importance_level="sequence")
    loss.backward()
    assert math.isfinite(loss.item()) and torch.isfinite(logp.grad).all()
    assert logp.grad[1].abs().sum() == 0 and stats.tokens == 1
