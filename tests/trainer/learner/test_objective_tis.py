"""Truncated importance sampling in the GRPO objective, and the alarm on the learner/vLLM log-prob gap."""

from __future__ import annotations

import logging
import math

import pytest
import torch

from halo_trainer.learner.objective import policy_loss
from halo_trainer.observe.metrics import GapAlarm


def leaf(values: list[list[float]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def mismatch_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three one-token sequences whose learner/vLLM ratios are 3 (A=+1), 3 (A=-1) and 0.5 (A=+1):
    vLLM gave the first two tokens a third of the learner's probability (a bf16 rounding outlier, a
    stale adapter), the last one twice it."""
    logp = leaf([[math.log(0.3)], [math.log(0.3)], [math.log(0.1)]])
    behaviour = torch.tensor([[math.log(0.1)], [math.log(0.1)], [math.log(0.2)]], dtype=torch.float64)
    return logp, behaviour, torch.tensor([1.0, -1.0, 1.0]), torch.ones(3, 1)


def test_the_cap_truncates_each_tokens_importance_weight() -> None:
    logp, behaviour, adv, mask = mismatch_case()
    loss, stats = policy_loss(logp, behaviour, adv, mask, tis_cap=2.0, max_completion_tokens=1)
    # w = min(3, 2) = 2, min(3, 2) = 2, min(0.5, 2) = 0.5; the PPO ratio against the learner itself is 1
    assert loss.item() == pytest.approx((-2.0 + 2.0 - 0.5) / 3)
    loss.backward()
    # d(-w * A * exp(logp - logp_old)) / d logp = -w * A, over 3 sequences
    assert logp.grad.flatten().tolist() == pytest.approx([-2 / 3, 2 / 3, -0.5 / 3])
    summary = stats.summary()
    assert summary["tis_frac"] == pytest.approx(2 / 3) and summary["clip_frac"] == 0.0
    # the ratio statistics stay the importance ratio against vLLM, before truncation
    assert (stats.ratio_min, stats.ratio_max) == (pytest.approx(0.5), pytest.approx(3.0))


def test_without_the_cap_the_mismatch_drops_one_token_and_inflates_another() -> None:
    """The coupled ratio (no cap) on the same case: the first token's gradient is clipped away and the
    second's grows with the mismatch; the capped objective bounds both by the cap."""
    for mismatch in (3.0, 30.0, 300.0):
        logp = leaf([[math.log(0.3)], [math.log(0.3)]])
        behaviour = torch.log(torch.tensor([[0.3 / mismatch], [0.3 / mismatch]], dtype=torch.float64))
        adv, mask = torch.tensor([1.0, -1.0]), torch.ones(2, 1)
        coupled, _ = policy_loss(logp, behaviour, adv, mask, max_completion_tokens=1)
        coupled.backward()
        assert logp.grad.flatten().tolist() == pytest.approx([0.0, mismatch / 2])
        logp.grad = None
        capped, _ = policy_loss(logp, behaviour, adv, mask, tis_cap=2.0, max_completion_tokens=1)
        capped.backward()
        assert logp.grad.flatten().tolist() == pytest.approx([-1.0, 1.0])


def test_on_policy_the_cap_changes_nothing() -> None:
    logp = leaf([[-1.0, -2.0, -0.5], [-0.3, -4.0, 0.0]])
    adv, mask = torch.tensor([0.5, -0.5]), torch.tensor([[1, 1, 1], [1, 1, 0]])
    plain, plain_stats = policy_loss(logp, logp.detach(), adv, mask, max_completion_tokens=3)
    plain.backward()
    plain_grad, logp.grad = logp.grad.clone(), None
    capped, capped_stats = policy_loss(logp, logp.detach(), adv, mask, tis_cap=2.0, max_completion_tokens=3)
    capped.backward()
    assert capped.item() == pytest.approx(plain.item()) and torch.allclose(logp.grad, plain_grad)
    assert capped_stats.truncated_tokens == 0 and capped_stats.summary()["ratio_mean"] == pytest.approx(1.0)


def test_the_ppo_clip_acts_on_the_ratio_to_the_learners_old_logprobs() -> None:
    logp = leaf([[math.log(0.3)]])
    old = torch.tensor([[math.log(0.2)]], dtype=torch.float64)  # rho = 1.5 > 1.2: clipped for A > 0
    behaviour = old.clone()  # w = 1
    loss, stats = policy_loss(logp, behaviour, torch.tensor([1.0]), torch.ones(1, 1), tis_cap=2.0, old_logprobs=old)
    loss.backward()
    assert loss.item() == pytest.approx(-1.2) and logp.grad.item() == 0.0 and stats.clipped_tokens == 1


def test_a_cap_below_one_is_refused() -> None:
    logp, behaviour, adv, mask = mismatch_case()
    with pytest.raises(ValueError, match="tis_cap=0.5"):
        policy_loss(logp, behaviour, adv, mask, tis_cap=0.5)


def test_the_gap_alarm_warns_naming_the_causes_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    alarm = GapAlarm(0.05, "run-1")
    with caplog.at_level(logging.WARNING, logger="halo.trainer.metrics"):
        assert alarm.check({"train/behaviour_logprob_gap": 0.01}) == {"train/behaviour_gap_alarms": 0.0}
        assert not caplog.records
        assert alarm.check({"train/behaviour_logprob_gap": 0.2, "rollout/staleness": 0.0}) == {
            "train/behaviour_gap_alarms": 1.0
        }
        assert alarm.check({"train/behaviour_logprob_gap": 0.3}) == {"train/behaviour_gap_alarms": 2.0}
    assert len(caplog.records) == 2  # one line per update over the threshold
    message = caplog.records[0].getMessage()
    for cause in ("dtype", "temperature", "generation_config", "adapter", "staleness"):
        assert cause in message
    assert GapAlarm(None, "run-2").check({"train/behaviour_logprob_gap": 9.0}) == {}
    assert GapAlarm(0.05, "run-3").check({"train/loss": 1.0}) == {}  # an update without the metric (DPO)
