"""The GRPO objective against numbers worked out by hand on tensors of a few tokens."""

from __future__ import annotations

import math

import pytest
import torch

from halo_trainer.learner.objective import (
    LossStats,
    advantages_by_group,
    batch_advantages,
    group_advantages,
    policy_loss,
    token_logprobs_and_entropy,
)


def close(a: torch.Tensor, b: list | float, tol: float = 1e-6) -> bool:
    return torch.allclose(a.to(torch.float64), torch.as_tensor(b, dtype=torch.float64), atol=tol, rtol=0)


# --- advantages ----------------------------------------------------------------------------------


def test_dr_grpo_advantage_is_reward_minus_group_mean() -> None:
    assert close(group_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0])), [0.5, -0.5, -0.5, 0.5])
    assert close(group_advantages(torch.tensor([0.2, 0.5, 1.1])), [-0.4, -0.1, 0.5])


def test_grpo_advantage_divides_by_unbiased_std_plus_eps() -> None:
    # std([1, 0, 0, 1]) with Bessel's correction = sqrt(1/3)
    expected = 0.5 / (math.sqrt(1 / 3) + 1e-4)
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), "grpo", eps=1e-4)
    assert close(adv, [expected, -expected, -expected, expected], tol=1e-6)


@pytest.mark.parametrize("advantage", ["dr_grpo", "grpo", "rloo", "reinforce_pp_baseline"])
def test_zero_variance_group_gets_exactly_zero_advantage(advantage: str) -> None:
    # 0.1 * 3 / 3 != 0.1 in floating point: the zero must be forced, not left to rounding.
    adv = group_advantages(torch.tensor([0.1, 0.1, 0.1]), advantage)
    assert torch.equal(adv, torch.zeros(3))
    assert torch.equal(group_advantages(torch.tensor([0.7]), advantage), torch.zeros(1))


def test_rloo_compares_each_reward_with_the_mean_of_the_others() -> None:
    # Worked by hand: rewards [1, 0, 0.5, 0.3]; the others' means are 0.8/3, 1.8/3, 1.3/3, 1.5/3.
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.5, 0.3], dtype=torch.float64), "rloo")
    assert close(adv, [1 - 0.8 / 3, 0 - 1.8 / 3, 0.5 - 1.3 / 3, 0.3 - 1.5 / 3], tol=1e-12)
    # ... which is G/(G-1) times Dr. GRPO's r - mean(r), group by group along the last dimension.
    rewards = torch.tensor([[1.0, 0.0, 0.5, 0.3], [0.2, 0.2, 0.9, 0.0]], dtype=torch.float64)
    assert close(group_advantages(rewards, "rloo"), group_advantages(rewards, "dr_grpo") * 4 / 3, tol=1e-12)


def test_rloo_equals_trls_rloo_advantage() -> None:
    """TRL's RLOOTrainer (0.2x, ``_generate_and_score_completions``) written out: rewards viewed as
    [prompts, G], baseline = (sum - r) / (G - 1), advantage = r - baseline, no normalisation."""
    rewards = torch.tensor([0.3, 1.0, 0.0, 0.0, 0.5, 0.5, 0.25, 1.0], dtype=torch.float64)
    grouped = rewards.view(-1, 4)
    trl = (grouped - (grouped.sum(dim=1, keepdim=True) - grouped) / (4 - 1)).flatten()
    ours = advantages_by_group(rewards.tolist(), [0, 0, 0, 0, 1, 1, 1, 1], "rloo")
    assert close(ours, trl.tolist(), tol=1e-6)


def test_reinforce_pp_baseline_scales_by_the_batchs_std_not_the_groups() -> None:
    # Worked by hand: centred rewards [.5, -.5, -.5, .5] and [-.125, -.125, -.125, .375], plus a flat
    # group [0, 0]; the sum of squares is 1 + 0.1875 over 10 completions (population std).
    groups = [torch.tensor(g, dtype=torch.float64) for g in ([1, 0, 0, 1], [0.5, 0.5, 0.5, 1.0], [0.3, 0.3])]
    std = math.sqrt(1.1875 / 10)
    a, b, flat = batch_advantages(groups, "reinforce_pp_baseline")
    assert close(a, [0.5 / std, -0.5 / std, -0.5 / std, 0.5 / std], tol=1e-12)
    assert close(b, [-0.125 / std, -0.125 / std, -0.125 / std, 0.375 / std], tol=1e-12)
    assert torch.equal(flat, torch.zeros(2, dtype=torch.float64))
    # Each group alone would be scaled by its own spread (grpo's difficulty bias); the batch's is shared:
    # the nearly-flat group keeps advantages 3/4 of the size of the other's.
    assert b.max() / a.max() == pytest.approx(0.75)
    # A tensor's leading dimensions are one batch, and a group of one has no say in the scale.
    two = group_advantages(torch.stack(groups[:2]), "reinforce_pp_baseline")
    assert close(two * math.sqrt(1.1875 / 8), [[0.5, -0.5, -0.5, 0.5], [-0.125, -0.125, -0.125, 0.375]], tol=1e-12)
    ragged = advantages_by_group([1.0, 0.0, 0.7, 0.0, 1.0], ["a", "a", "b", "a", "a"], "reinforce_pp_baseline")
    assert close(ragged, [1.0, -1.0, 0.0, -1.0, 1.0], tol=1e-6)


def test_reinforce_pp_baseline_equals_openrlhfs() -> None:
    """OpenRLHF v0.11.0 (``openrlhf/trainer/ppo_utils/experience_maker.py``, the advantage step for
    ``--advantage_estimator reinforce_baseline``) written out, with no KL in the reward: rewards
    viewed as [prompts, n], minus the group's mean; each token's return (gamma 1, the reward on the
    last token) is that; then mean and variance over every completion token of the batch,
    ``(A - mean) * var.clamp(min=1e-8).rsqrt()``. With completions of one length its token weights
    are our completion weights."""
    n, length = 4, 3
    rewards = torch.tensor([0.3, 1.0, 0.0, 0.0, 0.5, 0.5, 0.25, 1.0, 0.0, 0.0, 0.0, 0.1], dtype=torch.float64)
    centred = (rewards.reshape(-1, n) - rewards.reshape(-1, n).mean(-1, keepdim=True)).reshape(-1)
    action_mask = torch.ones(len(rewards), length, dtype=torch.float64)
    per_token = torch.zeros(len(rewards), length, dtype=torch.float64)
    per_token[:, -1] = centred  # compute_reward: the reward on the last action token
    returns = per_token.flip(-1).cumsum(-1).flip(-1)  # get_cumulative_returns with gamma = 1
    flat, mask = returns.flatten(), action_mask.flatten()
    mean = (flat * mask).sum() / mask.sum()
    var = ((flat - mean).pow(2) * mask).sum() / mask.sum()
    openrlhf = (returns - mean) * var.clamp(min=1e-8).rsqrt()
    ours = advantages_by_group(rewards.tolist(), [i // n for i in range(len(rewards))], "reinforce_pp_baseline")
    assert close(openrlhf, ours.unsqueeze(-1).expand(-1, length).tolist(), tol=1e-6)


def test_advantages_broadcast_over_leading_dims_and_ragged_groups() -> None:
    adv = group_advantages(torch.tensor([[1.0, 0.0], [0.3, 0.3]]))
    assert close(adv, [[0.5, -0.5], [0.0, 0.0]])
    ragged = advantages_by_group([1.0, 0.0, 0.0, 0.4, 1.0, 0.4], ["a", "a", "b", "b", "a", "c"])
    assert close(ragged, [1 / 3, -2 / 3, -0.2, 0.2, 1 / 3, 0.0])
    with pytest.raises(ValueError):
        advantages_by_group([1.0], ["a", "b"])


# --- loss and gradients --------------------------------------------------------------------------

# Two sequences, width 3; sequence 0 has two completion tokens, sequence 1 one.
MASK = torch.tensor([[1, 1, 0], [1, 0, 0]])


def leaf(values: list[list[float]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def test_dr_grpo_on_policy_loss_and_gradient() -> None:
    logp = leaf([[-1.0, -2.0, -9.0], [-0.5, -7.0, -7.0]])
    adv = torch.tensor([1.0, -1.0])
    # ratio == 1 everywhere: loss = -(1 * 2 tokens + (-1) * 1 token) / (T_max=4 * B=2) = -1/8
    loss, stats = policy_loss(logp, logp.detach(), adv, MASK, max_completion_tokens=4)
    assert close(loss, -1 / 8)
    loss.backward()
    # d loss / d logp_i,t = -A_i * m_i,t / (T_max * B): the plain policy gradient, same weight per token
    assert close(logp.grad, [[-1 / 8, -1 / 8, 0.0], [1 / 8, 0.0, 0.0]])
    assert stats.tokens == 3 and stats.clipped_tokens == 0
    assert stats.ratio_min == stats.ratio_max == 1.0


def test_grpo_loss_uses_per_sequence_mean() -> None:
    logp = leaf([[-1.0, -2.0, -9.0], [-0.5, -7.0, -7.0]])
    adv = torch.tensor([1.0, -1.0])
    # loss = (1/B) * [-(1 * 2)/2 + -(-1 * 1)/1] = 0; each token weighs 1/(|o_i| * B)
    loss, _ = policy_loss(logp, logp.detach(), adv, MASK, loss_norm="sequence")
    assert close(loss, 0.0)
    loss.backward()
    assert close(logp.grad, [[-1 / 4, -1 / 4, 0.0], [1 / 2, 0.0, 0.0]])


def test_dr_grpo_default_constant_is_tensor_width_and_num_sequences_overrides_batch() -> None:
    logp = leaf([[-1.0, -2.0, -9.0], [-0.5, -7.0, -7.0]])
    adv = torch.tensor([1.0, -1.0])
    loss, _ = policy_loss(logp, logp.detach(), adv, MASK)
    assert close(loss, -1 / 6)  # constant = T = 3
    # The first row alone as a micro-batch of a batch of 2: -(2) / (4 * 2)
    loss0, _ = policy_loss(logp[:1], logp[:1].detach(), adv[:1], MASK[:1], max_completion_tokens=4, num_sequences=2)
    loss1, _ = policy_loss(logp[1:], logp[1:].detach(), adv[1:], MASK[1:], max_completion_tokens=4, num_sequences=2)
    full, _ = policy_loss(logp, logp.detach(), adv, MASK, max_completion_tokens=4)
    assert close(loss0, -2 / 8) and close(loss0 + loss1, full)


def test_zero_advantage_gives_zero_loss_and_zero_gradient() -> None:
    logp = leaf([[-1.0, -2.0, -9.0], [-0.5, -7.0, -7.0]])
    adv = group_advantages(torch.tensor([0.3, 0.3], dtype=torch.float64))
    behaviour = logp.detach() + 0.05  # even off-policy
    loss, _ = policy_loss(logp, behaviour, adv, MASK, max_completion_tokens=4)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(logp.grad, torch.zeros_like(logp))


def off_policy_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three one-token sequences with ratios 1.5 (A=+1), 1.5 (A=-1), 0.5 (A=-1)."""
    logp = leaf([[math.log(0.3)], [math.log(0.3)], [math.log(0.1)]])
    behaviour = torch.tensor([[math.log(0.2)], [math.log(0.2)], [math.log(0.2)]], dtype=torch.float64)
    adv = torch.tensor([1.0, -1.0, -1.0])
    return logp, behaviour, adv, torch.ones(3, 1)


def test_clipping_on() -> None:
    logp, behaviour, adv, mask = off_policy_case()
    loss, stats = policy_loss(logp, behaviour, adv, mask, clip_eps_low=0.2, clip_eps_high=0.2, max_completion_tokens=1)
    # per token: -min(1.5, 1.2) = -1.2 (clipped); -min(-1.5, -1.2) = 1.5 (not); -min(-0.5, -0.8) = 0.8 (clipped)
    assert close(loss, (-1.2 + 1.5 + 0.8) / 3)
    loss.backward()
    # only the unclipped token has a gradient: d(-rho * A)/d logp = -A * rho / 3 = 1.5 / 3
    assert close(logp.grad, [[0.0], [0.5], [0.0]])
    assert stats.clipped_tokens == 2
    assert stats.ratio_min == pytest.approx(0.5) and stats.ratio_max == pytest.approx(1.5)
    assert stats.summary()["clip_frac"] == pytest.approx(2 / 3)


def test_clipping_off() -> None:
    logp, behaviour, adv, mask = off_policy_case()
    loss, stats = policy_loss(
        logp, behaviour, adv, mask, clip_eps_low=None, clip_eps_high=None, max_completion_tokens=1
    )
    assert close(loss, (-1.5 + 1.5 + 0.5) / 3)
    loss.backward()
    # d(-rho * A)/d logp = -A * rho, each divided by 3
    assert close(logp.grad, [[-0.5], [0.5], [0.5 / 3]])
    assert stats.clipped_tokens == 0


def test_asymmetric_clip_only_bounds_one_side() -> None:
    logp, behaviour, adv, mask = off_policy_case()
    loss, stats = policy_loss(logp, behaviour, adv, mask, clip_eps_low=None, clip_eps_high=0.6, max_completion_tokens=1)
    # ceiling 1.6 > 1.5: nothing is clipped above, and there is no floor
    assert close(loss, (-1.5 + 1.5 + 0.5) / 3)
    assert stats.clipped_tokens == 0


def test_k3_kl_value_and_gradient() -> None:
    # ref - logp = log 2 on the one completion token: k3 = 2 - log 2 - 1, d k3 / d logp = 1 - 2 = -1
    logp = leaf([[math.log(0.25), 0.0]])
    ref = torch.tensor([[math.log(0.5), 123.0]], dtype=torch.float64)  # position 1 is masked out
    mask = torch.tensor([[1, 0]])
    loss, stats = policy_loss(
        logp, logp.detach(), torch.tensor([0.0]), mask, ref_logprobs=ref, kl_coef=0.1, max_completion_tokens=2
    )
    k3 = 2 - math.log(2) - 1
    assert close(loss, 0.1 * k3 / 2)
    assert stats.summary()["kl"] == pytest.approx(k3)
    loss.backward()
    assert close(logp.grad, [[0.1 * -1 / 2, 0.0]])


def test_kl_is_zero_at_the_reference_and_required_when_weighted() -> None:
    logp = leaf([[-1.0, -2.0]])
    loss, stats = policy_loss(
        logp, logp.detach(), torch.tensor([0.0]), torch.ones(1, 2), ref_logprobs=logp.detach(), kl_coef=1.0
    )
    assert loss.item() == 0.0 and stats.kl_sum == 0.0
    with pytest.raises(ValueError, match="ref_logprobs"):
        policy_loss(logp, logp.detach(), torch.tensor([0.0]), torch.ones(1, 2), kl_coef=1.0)


def test_garbage_outside_the_mask_is_ignored() -> None:
    logp = leaf([[-1.0, float("-inf")]])
    behaviour = torch.tensor([[-1.0, float("nan")]], dtype=torch.float64)
    loss, stats = policy_loss(logp, behaviour, torch.tensor([2.0]), torch.tensor([[1, 0]]), max_completion_tokens=2)
    loss.backward()
    assert close(loss, -2.0 / 2)
    assert close(logp.grad, [[-1.0, 0.0]])
    assert math.isfinite(stats.summary()["behaviour_logprob_gap"])


def test_shape_mismatch_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="shape mismatch"):
        policy_loss(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2), torch.ones(2, 3))


def test_stats_merge_equals_whole_batch() -> None:
    logp, behaviour, adv, mask = off_policy_case()
    ent = torch.tensor([[1.0], [2.0], [3.0]])
    _, whole = policy_loss(logp, behaviour, adv, mask, entropy=ent)
    _, a = policy_loss(logp[:1], behaviour[:1], adv[:1], mask[:1], entropy=ent[:1])
    _, b = policy_loss(logp[1:], behaviour[1:], adv[1:], mask[1:], entropy=ent[1:])
    merged = LossStats().merge(a).merge(b)
    assert merged.summary() == pytest.approx(whole.summary())
    assert whole.summary()["entropy"] == pytest.approx(2.0)


def test_token_logprobs_and_entropy() -> None:
    logits = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [math.log(3.0), 0.0, -math.inf, -math.inf]]])
    logp, ent = token_logprobs_and_entropy(logits, torch.tensor([[2, 0]]))
    assert close(logp, [[math.log(0.25), math.log(0.75)]])
    # uniform over 4: log 4; (0.75, 0.25): -(0.75 log 0.75 + 0.25 log 0.25); -inf logits contribute 0 * -inf
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert ent is not None and ent[0, 0].item() == pytest.approx(math.log(4))
    assert ent[0, 1].item() == pytest.approx(h)
