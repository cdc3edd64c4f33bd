"""The step-level DPO objective against numbers worked out by hand and against TRL's sigmoid DPO."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from halo_trainer.learner.dpo import DPOStats, action_logprobs, dpo_loss


def close(a: torch.Tensor | float, b: torch.Tensor | list | float, tol: float = 1e-6) -> bool:
    return torch.allclose(
        torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64), atol=tol, rtol=0
    )


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# One pair: the chosen action has two completion tokens (width 3), the rejected one token (width 2).
CHOSEN = [[-1.0, -0.5, 0.0]]
REF_CHOSEN = [[-1.2, -0.6, 0.0]]
CHOSEN_MASK = torch.tensor([[1, 1, 0]])
REJECTED = [[-2.0, 0.0]]
REF_REJECTED = [[-1.5, 0.0]]
REJECTED_MASK = torch.tensor([[1, 0]])
# s_w = (-1.5) - (-1.8) = 0.3; s_l = -2.0 - (-1.5) = -0.5; h = 0.8
H = 0.8


def one_pair(beta: float, rpo_alpha: float = 0.0):
    chosen = torch.tensor(CHOSEN, dtype=torch.float64, requires_grad=True)
    rejected = torch.tensor(REJECTED, dtype=torch.float64, requires_grad=True)
    loss, stats = dpo_loss(
        chosen,
        rejected,
        torch.tensor(REF_CHOSEN, dtype=torch.float64),
        torch.tensor(REF_REJECTED, dtype=torch.float64),
        CHOSEN_MASK,
        REJECTED_MASK,
        beta=beta,
        rpo_alpha=rpo_alpha,
    )
    loss.backward()
    return loss, stats, chosen.grad, rejected.grad


def test_action_logprobs_sums_completion_tokens_only() -> None:
    logp = torch.tensor([[-1.0, -2.0, float("nan")], [-0.5, float("-inf"), 3.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert close(action_logprobs(logp, mask), [-3.0, -0.5])


def test_loss_and_gradient_by_hand() -> None:
    beta = 0.5
    loss, stats, g_w, g_l = one_pair(beta)
    # -log sigmoid(0.4) = log(1 + e^-0.4)
    assert close(loss, math.log1p(math.exp(-beta * H)), 1e-12)
    # d/d logp_w,t = -beta * sigmoid(-beta h) on every chosen token; +that on rejected ones; 0 on padding
    g = beta * sigmoid(-beta * H)
    assert close(g_w, [[-g, -g, 0.0]], 1e-12)
    assert close(g_l, [[g, 0.0]], 1e-12)
    s = stats.summary()
    assert s["pairs"] == 1
    assert close(s["chosen_reward"], beta * 0.3, 1e-9) and close(s["rejected_reward"], beta * -0.5, 1e-9)
    assert close(s["reward_margin"], beta * H, 1e-9)
    assert s["reward_accuracy"] == 1.0
    assert s["tokens"] == 3.0
    # k3 per token: d = ref - logp, exp(d) - d - 1, averaged over the three completion tokens
    k3 = [math.exp(d) - d - 1 for d in (-0.2, -0.1, 0.5)]
    assert close(s["kl"], sum(k3) / 3, 1e-9)
    assert close(s["nll"], 0.75, 1e-12)  # reported even when it is not in the loss
    assert close(s["loss"], s["preference_loss"], 1e-12)


def test_rpo_term_is_the_chosen_actions_per_token_nll() -> None:
    beta, rpo_alpha = 0.5, 0.4
    loss, stats, g_w, g_l = one_pair(beta, rpo_alpha)
    nll = (1.0 + 0.5) / 2  # -sum logp_w / |a_w|
    assert close(loss, math.log1p(math.exp(-beta * H)) + rpo_alpha * nll, 1e-12)
    g = beta * sigmoid(-beta * H)
    assert close(g_w, [[-g - rpo_alpha / 2, -g - rpo_alpha / 2, 0.0]], 1e-12)
    assert close(g_l, [[g, 0.0]], 1e-12)  # the rejected action gets no NLL gradient
    assert close(stats.summary()["nll"], nll, 1e-12)
    assert close(stats.summary()["loss"], float(loss.detach()), 1e-12)


def trl_sigmoid_dpo(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    """TRL's ``DPOTrainer.dpo_loss`` for ``loss_type="sigmoid"``, ``label_smoothing=0``, written out."""
    pi_logratios = policy_chosen - policy_rejected
    ref_logratios = ref_chosen - ref_rejected
    logits = pi_logratios - ref_logratios
    losses = -F.logsigmoid(beta * logits)
    chosen_rewards = beta * (policy_chosen - ref_chosen).detach()
    rejected_rewards = beta * (policy_rejected - ref_rejected).detach()
    return losses, chosen_rewards, rejected_rewards


@pytest.mark.parametrize("beta", [0.05, 0.1, 1.0])
def test_matches_trl_sigmoid_dpo_on_summed_sequence_logprobs(beta: float) -> None:
    gen = torch.Generator().manual_seed(7)
    pairs, width = 6, 5
    tok = lambda: -torch.rand(pairs, width, generator=gen, dtype=torch.float64) * 3  # noqa: E731
    chosen, rejected, ref_c, ref_r = tok(), tok(), tok(), tok()
    lengths_w = torch.tensor([1, 2, 5, 3, 4, 5])
    lengths_l = torch.tensor([5, 1, 2, 4, 3, 1])
    mask_w = (torch.arange(width) < lengths_w[:, None]).long()
    mask_l = (torch.arange(width) < lengths_l[:, None]).long()
    chosen.requires_grad_(True)
    loss, stats = dpo_loss(chosen, rejected, ref_c, ref_r, mask_w, mask_l, beta=beta)

    seq = lambda t, m: (t * m).sum(-1)  # noqa: E731
    chosen_ref = chosen.detach().clone().requires_grad_(True)
    losses, r_w, r_l = trl_sigmoid_dpo(
        seq(chosen_ref, mask_w), seq(rejected, mask_l), seq(ref_c, mask_w), seq(ref_r, mask_l), beta
    )
    assert close(loss, losses.mean(), 1e-12)
    loss.backward()
    losses.mean().backward()
    assert close(chosen.grad, chosen_ref.grad, 1e-12)
    s = stats.summary()
    assert close(s["chosen_reward"], r_w.mean(), 1e-12)
    assert close(s["rejected_reward"], r_l.mean(), 1e-12)
    assert close(s["reward_margin"], (r_w - r_l).mean(), 1e-12)
    assert close(s["reward_accuracy"], (r_w > r_l).double().mean(), 1e-12)


def test_garbage_in_padding_changes_nothing() -> None:
    clean = one_pair(0.5, 0.3)
    chosen = torch.tensor([[-1.0, -0.5, float("nan")]], dtype=torch.float64, requires_grad=True)
    rejected = torch.tensor([[-2.0, float("inf")]], dtype=torch.float64, requires_grad=True)
    loss, _ = dpo_loss(
        chosen,
        rejected,
        torch.tensor([[-1.2, -0.6, float("-inf")]], dtype=torch.float64),
        torch.tensor([[-1.5, float("nan")]], dtype=torch.float64),
        CHOSEN_MASK,
        REJECTED_MASK,
        beta=0.5,
        rpo_alpha=0.3,
    )
    loss.backward()
    assert close(loss, clean[0], 1e-12)
    assert close(chosen.grad, clean[2], 1e-12) and close(rejected.grad, clean[3], 1e-12)


def test_reference_gets_no_gradient_and_equal_policy_means_zero_reward() -> None:
    chosen = torch.tensor(CHOSEN, dtype=torch.float64, requires_grad=True)
    rejected = torch.tensor(REJECTED, dtype=torch.float64, requires_grad=True)
    # The reference is the policy itself (e.g. the iteration's first step): every implicit reward is 0.
    loss, stats = dpo_loss(chosen, rejected, chosen, rejected, CHOSEN_MASK, REJECTED_MASK, beta=0.1)
    loss.backward()
    assert close(loss, math.log(2.0), 1e-12)
    g = 0.1 * 0.5
    assert close(chosen.grad, [[-g, -g, 0.0]], 1e-12)  # the reference path would have cancelled it
    s = stats.summary()
    assert s["reward_accuracy"] == 0.0 and s["reward_margin"] == 0.0 and s["kl"] == 0.0


def test_micro_batches_add_up_to_the_full_batch() -> None:
    gen = torch.Generator().manual_seed(3)
    tok = lambda: -torch.rand(4, 3, generator=gen, dtype=torch.float64)  # noqa: E731
    chosen, rejected, ref_c, ref_r = tok(), tok(), tok(), tok()
    mask_w = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0]])
    mask_l = torch.tensor([[1, 0, 0], [1, 1, 1], [1, 1, 0], [1, 0, 0]])
    kw = {"beta": 0.3, "rpo_alpha": 0.5}
    full, full_stats = dpo_loss(chosen, rejected, ref_c, ref_r, mask_w, mask_l, **kw)
    parts = [
        dpo_loss(chosen[s], rejected[s], ref_c[s], ref_r[s], mask_w[s], mask_l[s], num_pairs=4, **kw)
        for s in (slice(0, 1), slice(1, 4))
    ]
    assert close(parts[0][0] + parts[1][0], full, 1e-12)
    merged = parts[0][1].merge(parts[1][1])
    for key, value in full_stats.summary().items():
        assert close(merged.summary()[key], value, 1e-12), key
    assert DPOStats().merge(full_stats) == full_stats


def test_descending_the_loss_prefers_the_chosen_action() -> None:
    # A one-step policy over 4 single-token actions: DPO must move probability to the chosen one.
    logits = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    ref = torch.zeros(4, dtype=torch.float64).log_softmax(-1)
    opt = torch.optim.SGD([logits], lr=1.0)
    mask = torch.ones(1, 1)
    for _ in range(30):
        logp = logits.log_softmax(-1)
        loss, stats = dpo_loss(logp[[1]][None], logp[[2]][None], ref[[1]][None], ref[[2]][None], mask, mask, beta=0.5)
        opt.zero_grad()
        loss.backward()
        opt.step()
    probs = logits.detach().softmax(-1)
    assert probs[1] > 0.5 and probs[2] < 0.25
    assert stats.summary()["reward_accuracy"] == 1.0
    assert stats.summary()["kl"] > 0.0


def test_bad_input_is_a_clear_error() -> None:
    t = torch.zeros(1, 2)
    m = torch.ones(1, 2)
    with pytest.raises(ValueError, match="same \\[pairs, tokens\\] shape"):
        dpo_loss(t, t, torch.zeros(1, 3), t, m, m)
    with pytest.raises(ValueError, match="no completion tokens"):
        dpo_loss(t, t, t, t, torch.tensor([[0, 0]]), m)
    with pytest.raises(ValueError, match="2 rejected"):
        dpo_loss(t, torch.zeros(2, 2), t, torch.zeros(2, 2), m, torch.ones(2, 2))
    with pytest.raises(ValueError, match="beta"):
        dpo_loss(t, t, t, t, m, m, beta=0.0)
    with pytest.raises(ValueError, match="rpo_alpha"):
        dpo_loss(t, t, t, t, m, m, rpo_alpha=-1.0)
