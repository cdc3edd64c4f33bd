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
from halo_trainer.grpo.groups import select_groups
from halo_trainer.grpo.seed_contrast import contrast_across_seeds
from halo_trainer.learner.batching import advantages
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


def test_an_updates_groups_share_reinforce_pps_batch_scale():
    # Centred rewards [0, -1, -1, 2] and [0.5, -0.5]: squares sum to 6 + 0.5 over six completions.
    ts = [tr("g", "e", r, i=i) for i, r in enumerate([1.0, 0.0, 0.0, 3.0])]
    ts2 = [tr("h", "e", r, i=10 + i) for i, r in enumerate([1.0, 0.0])]
    a, b = advantages([ts, ts2], GroupMode.STEP, "reinforce_pp_baseline")
    std = (6.5 / 6) ** 0.5
    assert a == pytest.approx([0.0, -1 / std, -1 / std, 2 / std]) and b == pytest.approx([0.5 / std, -0.5 / std])
    # Episode groups: one value per episode, every step of it gets its episode's.
    eps = [tr("g", "e0", 0.1, ret=1.0, i=0), tr("g", "e0", 0.9, ret=1.0, i=1), tr("g", "e1", -1.0, ret=-1.0, i=2)]
    [adv] = advantages(select_groups(eps, 0, 2, GroupMode.EPISODE).groups, GroupMode.EPISODE, "reinforce_pp_baseline")
    assert adv == pytest.approx([1.0, 1.0, -1.0])


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
    png = (Path(__file__).resolve().parents[3] / "docs/img/sites/playground-click-fixed.png").read_bytes()
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


def cand(layout: int, text: str, reward: float, task: str = "local.playground-2", step: int = 0) -> Transition:
    """Candidate ``text`` of layout ``layout``'s step group (one group per layout, as one update plays them)."""
    return tr(f"j{layout}-s{step}", f"e{layout}", reward, i=hash((layout, text, task, step)) % 10_000).model_copy(
        update={"completion_text": text, "task_id": task, "step": step}
    )


def test_seed_contrast_takes_out_what_an_action_earned_on_every_seed():
    # Four layouts, the same three candidates drawn on each (common random numbers); "q<k>" hits layout k.
    groups = [[cand(k, "q0", 10.0 * (k == 0)), cand(k, "q1", 10.0 * (k == 1)), cand(k, "noop", 0.0)] for k in range(4)]
    plain = advantages(groups, GroupMode.STEP, "dr_grpo")
    contrasted, matched = contrast_across_seeds(groups, plain, 1.0)
    assert matched == 12
    # Per action, the contrasted advantages sum to zero over the seeds: no seed-independent push is left.
    for i in range(3):
        assert sum(g[i] for g in contrasted) == pytest.approx(0.0, abs=1e-9)
    # Plain: [20/3, -10/3, -10/3] on layout 0, the same permuted on layout 1, zero where nothing hit.
    # Each action's mean over the 4 layouts, [5/6, 5/6, -5/3], is what it earned on every layout alike.
    assert plain[0] == pytest.approx([20 / 3, -10 / 3, -10 / 3]) and plain[2] == [0.0, 0.0, 0.0]
    assert contrasted[0] == pytest.approx([20 / 3 - 5 / 6, -10 / 3 - 5 / 6, -10 / 3 + 5 / 3])
    # Where nothing hit, the clicks that hit elsewhere are now pushed down: on this screen they are worse.
    assert contrasted[2] == pytest.approx([-5 / 6, -5 / 6, 5 / 3])
    half, _ = contrast_across_seeds(groups, plain, 0.5)
    for h, p, c in zip(half, plain, contrasted, strict=True):
        assert h == pytest.approx([(a + b) / 2 for a, b in zip(p, c, strict=True)])
    assert contrast_across_seeds(groups, plain, 0.0)[0] == plain


def test_seed_contrast_leaves_actions_played_on_one_seed_or_elsewhere_alone():
    groups = [
        [cand(0, "a", 1.0), cand(0, "only-here", 0.0)],
        [cand(1, "a", 0.0), cand(1, "b", 2.0)],
        [cand(2, "a", 5.0, task="local.playground-4"), cand(2, "c", 0.0, task="local.playground-4")],  # another task
        [cand(3, "a", 5.0, step=1), cand(3, "d", 0.0, step=1)],  # another step
    ]
    plain = advantages(groups, GroupMode.STEP, "dr_grpo")
    contrasted, matched = contrast_across_seeds(groups, plain, 1.0)
    assert matched == 2  # "a" at step 0 of playground-2, on seeds 0 and 1
    assert contrasted[0][1] == plain[0][1] and contrasted[1][1] == plain[1][1]
    assert contrasted[2] == plain[2] and contrasted[3] == plain[3]
    assert contrasted[0][0] == pytest.approx(plain[0][0] - (plain[0][0] + plain[1][0]) / 2)


def test_seed_contrast_leaves_no_gradient_on_the_screen_blind_weights():
    """A softmax policy over 3 clicks with logits ``w + V @ x_layout``: ``w`` is the part that moves every
    layout alike. With the same candidates on every layout, the contrasted update has no component
    on ``w``, and its step on ``V`` still raises each layout's own button."""
    torch.manual_seed(0)
    x = torch.eye(4)
    w, v = torch.zeros(3, requires_grad=True), (0.1 * torch.randn(3, 4)).requires_grad_()
    texts = ["q0", "q1", "noop"]
    groups = [[cand(k, t, 10.0 * (t == f"q{k}")) for t in texts] for k in range(4)]
    plain = advantages(groups, GroupMode.STEP, "dr_grpo")
    contrasted, _ = contrast_across_seeds(groups, plain, 1.0)

    def grads(adv):
        logp = torch.log_softmax(w + (v @ x).T, dim=-1)  # [layout, action]
        loss = -sum(adv[k][i] * logp[k, i] for k in range(4) for i in range(3))
        return torch.autograd.grad(loss, (w, v))

    (gw_plain, _), (gw, gv) = grads(plain), grads(contrasted)
    assert gw_plain.abs().max() > 1.0  # without the contrast, a blind push
    assert gw.abs().max() < 1e-6
    with torch.no_grad():
        before = torch.log_softmax((v @ x).T, dim=-1)
        after = torch.log_softmax(((v - 0.01 * gv) @ x).T, dim=-1)
    assert after[0, 0] > before[0, 0] and after[1, 1] > before[1, 1]  # q0 on layout 0, q1 on layout 1
    assert after[2, 0] < before[2, 0] and after[3, 1] < before[3, 1]  # and less of them where they miss
