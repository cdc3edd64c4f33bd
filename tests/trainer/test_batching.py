"""Grouping, staleness, advantages and rollout metrics on hand-made transitions (no model)."""

from __future__ import annotations

import pytest
import torch

from halo.actions import format_tool_call
from halo.schemas import (
    EpisodeSummary,
    GroupMode,
    PromptRecord,
    RewardBreakdown,
    RolloutResult,
    SamplingParams,
    Transition,
    Viewport,
)
from halo_trainer.learner.batching import advantages, select_groups
from halo_trainer.observe.metrics import rollout_metrics, wilson_interval
from tests.learner_config import plain_config

OFF = SamplingParams(max_tokens=256, structured_outputs="off", history_limit=8, viewport=Viewport())


def tr(
    group: str, episode: str, reward: float, version: int = 3, infra: bool = False, ret: float | None = None, i: int = 0
) -> Transition:
    return Transition(
        transition_id=f"{group}-{episode}-{i}",
        run_id="r",
        job_id="j",
        episode_id=episode,
        group_id=group,
        task_id="local.playground-1",
        step=0,
        policy_version=version,
        prompt=PromptRecord(goal="g", screenshot_sha256="0" * 64, prompt_token_ids=[1, 2]),
        completion_text="x",
        completion_token_ids=[5],
        behaviour_logprobs=[-1.0],
        sampling=OFF,
        reward=RewardBreakdown(transition_id=f"t{i}", total=reward),
        infra_error=infra,
        episode_return=ret,
    )


def test_step_groups_drop_infra_stale_and_singletons():
    ts = [tr("g1", "e", r, i=i) for i, r in enumerate([1.0, 0.0, 0.0, 3.0])]
    ts += [tr("g2", "e", 1.0, infra=True, i=9), tr("g2", "e", 0.0, i=10)]  # one left: singleton
    ts += [tr("g3", "e", 1.0, version=0, i=11), tr("g3", "e", 2.0, version=0, i=12)]  # stale
    sel = select_groups(ts, current_version=3, max_staleness=2, mode=GroupMode.STEP)
    assert [len(g) for g in sel.groups] == [4]
    assert (sel.dropped_infra, sel.dropped_stale, sel.dropped_singleton) == (1, 2, 1)


def test_step_advantages_are_centred_rewards_without_std_division():
    ts = [tr("g", "e", r, i=i) for i, r in enumerate([1.0, 0.0, 0.0, 3.0])]
    [adv] = advantages([ts], GroupMode.STEP, "dr_grpo")
    assert adv == pytest.approx([0.0, -1.0, -1.0, 2.0])
    [std_scaled] = advantages([ts], GroupMode.STEP, "grpo")
    assert std_scaled[3] == pytest.approx(2.0 / 2**0.5, rel=1e-3)  # sample std of [1,0,0,3] is sqrt(2)


def test_episode_advantages_credit_every_step_with_its_episode_return():
    ts = [tr("g", "e0", 0.1, ret=1.0, i=0), tr("g", "e0", 0.9, ret=1.0, i=1), tr("g", "e1", -1.0, ret=-1.0, i=2)]
    sel = select_groups(ts, 0, 2, GroupMode.EPISODE)
    [adv] = advantages(sel.groups, GroupMode.EPISODE, "dr_grpo")
    assert adv == pytest.approx([1.0, 1.0, -1.0])
    lone = select_groups(ts[:2], 0, 2, GroupMode.EPISODE)  # one episode: nothing to compare with
    assert lone.groups == [] and lone.dropped_singleton == 2


def test_rollout_metrics_follow_the_seeds_table():
    same = [tr("a", "e", 0.1, i=i) for i in range(4)]
    spread = [tr("b", "e", r, i=10 + i) for i, r in enumerate([0.0, 10.0])]
    spread[1] = spread[1].model_copy(update={"task_success": True})
    result = RolloutResult(
        job_id="j",
        run_id="r",
        policy_version=3,
        transitions=same + spread,
        episodes=[
            EpisodeSummary(
                run_id="r",
                job_id="j",
                episode_id="e",
                group_id="a",
                task_id="t",
                policy_version=3,
                steps=2,
                episode_return=1.0,
                success=True,
                valid_actions=2,
            )
        ],
    )
    m = rollout_metrics([result], select_groups(same + spread, 3, 2, GroupMode.STEP), 3)
    assert m["rollout/frac_reward_zero_std"] == 0.5
    assert m["rollout/reward_std"] == pytest.approx(2.5)
    assert m["rollout/success_rate"] == 1.0 and m["rollout/episode_length"] == 2.0
    assert m["rollout/sample_success_rate"] == pytest.approx(1 / 6)  # one of the six sampled actions
    assert m["rollout/action_validity"] == 0.0  # these hand-made transitions carry no action


def test_wilson_interval():
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and 0.25 < high < 0.35
    low, high = wilson_interval(10, 10)
    assert high == 1.0 and 0.65 < low < 0.75


def test_learner_batch_replays_the_grammar_so_forced_tokens_carry_no_gradient(tmp_path):
    """Under structured outputs vLLM's log-probs are over the grammar's allowed tokens; the batch
    carries the same per-token masks, so the learner's log-prob of a forced token is exactly 0."""
    from pathlib import Path

    from halo.schemas import Action
    from halo.screenshots import ScreenshotStore
    from halo_model.inputs import PromptMismatch, prompt_inputs
    from halo_model.loading import load_model, load_processor
    from halo_model.tiny import build_tiny_model
    from halo_trainer.learner.batching import learner_batch
    from halo_trainer.learner.learner import Learner

    model_dir = build_tiny_model()
    processor = load_processor(model_dir)
    tokenizer = processor.tokenizer
    png = (Path(__file__).resolve().parents[2] / "docs/img/sites/playground-click-fixed.png").read_bytes()
    store = ScreenshotStore(tmp_path)
    sha = store.put(png)
    prompt_ids = prompt_inputs(processor, "Click the Submit button.", [], [png])["input_ids"][0].tolist()
    answers = [Action(action="left_click", coordinate=(512, 348)), Action(action="scroll", pixels=-30)]
    completions = [
        tokenizer.encode(format_tool_call(a), add_special_tokens=False)
        + [tokenizer.convert_tokens_to_ids("<|im_end|>")]
        for a in answers
    ]
    transitions = [
        tr("g", "e", float(i), i=i).model_copy(
            update={
                "prompt": PromptRecord(
                    goal="Click the Submit button.", screenshot_sha256=sha, prompt_token_ids=prompt_ids
                ),
                "completion_token_ids": ids,
                "behaviour_logprobs": [-0.5] * len(ids),
            }
        )
        for i, ids in enumerate(completions)
    ]
    learner = Learner(load_model(model_dir), plain_config(lora_r=4, lora_alpha=8))
    kw = {"use_behaviour_logprobs": True}
    regex = [
        t.model_copy(update={"sampling": OFF.model_copy(update={"structured_outputs": "regex"})}) for t in transitions
    ]
    batch = learner_batch(regex, [1.0, -1.0], processor, store, vocab_size=learner.vocab_size, **kw)
    assert batch.allowed is not None and batch.allowed.shape[:2] == batch.inputs.completion_ids.shape
    assert batch.behaviour_logprobs is not None and batch.behaviour_logprobs[0, 0] == -0.5
    choices = batch.allowed.sum(-1)  # allowed tokens at each completion position
    for row, ids in enumerate(completions):
        on = batch.allowed[row, torch.arange(len(ids)), torch.tensor(ids)]
        assert bool(on.all()), "every sampled token is allowed by the replayed grammar"
        assert choices[row, : len(ids)].min() == 1 and choices[row, : len(ids)].max() > 1
    logp = learner.logprobs(batch)
    forced = (choices == 1) & batch.inputs.completion_mask
    assert torch.all(logp[forced] == 0.0)  # log 1: a forced token has no gradient to give
    assert torch.all(logp[(choices > 1) & batch.inputs.completion_mask] < 0.0)
    unmasked = learner_batch(transitions, [1.0, -1.0], processor, store, **kw)
    assert unmasked.allowed is None and torch.all(learner.logprobs(unmasked)[forced] < -1.0)
    with pytest.raises(ValueError, match="vocab_size"):
        learner_batch(regex, [1.0, -1.0], processor, store, **kw)
    with pytest.raises(ValueError, match="one way of sampling"):
        learner_batch([transitions[0], regex[1]], [1.0, -1.0], processor, store, vocab_size=learner.vocab_size, **kw)
    # The viewport the prompt described comes from the transition: another one renders another prompt.
    wide = OFF.model_copy(update={"viewport": Viewport(width=1920, height=1080)})
    with pytest.raises(PromptMismatch):
        learner_batch(
            [t.model_copy(update={"sampling": wide}) for t in transitions], [1.0, -1.0], processor, store, **kw
        )
