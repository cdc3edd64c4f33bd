"""The LoRA learner on the project's tiny Qwen3-VL, its inputs built by ``halo_model.inputs.build_batch``."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
import torch
from safetensors import safe_open

from halo.settings.trainer import LearnerConfig
from halo_model.inputs import SampleRecord, build_batch, select_rows
from halo_model.loading import load_processor
from halo_trainer.learner.learner import Learner
from halo_trainer.learner.learner_batch import LearnerBatch, logprobs_and_entropy
from halo_trainer.learner.objective import group_advantages
from tests.conftest import noise_png
from tests.learner_config import plain_config

GOAL = "Click the OK button."


@pytest.fixture(scope="module")
def processor(tiny_model_dir):
    return load_processor(tiny_model_dir)


def tiny_model(base_model) -> torch.nn.Module:
    """A fresh copy of the tiny model (``base_model``, loaded once by the conftest); the seed makes
    every learner's LoRA initialisation the same."""
    torch.manual_seed(0)
    return copy.deepcopy(base_model)


def group_batch(processor, advantages: list[float], completions: list[list[int]] | None = None) -> LearnerBatch:
    """One prompt with a screenshot, several completions of it (a step group)."""
    completions = completions or [[10, 11, 12], [20, 21], [30, 31, 32, 33], [40]][: len(advantages)]
    png = noise_png(64, 64, seed=1)
    inputs = build_batch(processor, [SampleRecord(GOAL, [], [png], c) for c in completions])
    return LearnerBatch(inputs=inputs, advantages=torch.tensor(advantages))


def mixed_batch(processor, advantages: list[float]) -> LearnerBatch:
    """Rows with different prompts and image sizes (micro-batches must split the images right)."""
    records = [
        SampleRecord(GOAL, [], [noise_png(64, 64, seed=2)], [10, 11]),
        SampleRecord(
            "Open the second tab and read it.", ["left_click(coordinate=[3, 4])"], [noise_png(96, 64, 3)], [12, 13, 14]
        ),
        SampleRecord(GOAL, [], [noise_png(64, 128, seed=4)], [15]),
    ]
    return LearnerBatch(inputs=build_batch(processor, records), advantages=torch.tensor(advantages))


def config(**overrides) -> LearnerConfig:
    base = {"learning_rate": 1e-3, "lora_r": 4, "lora_alpha": 8.0, "max_tokens": 8}
    return plain_config(**{**base, **overrides})


def sequence_logprobs(learner: Learner, batch: LearnerBatch) -> torch.Tensor:
    return learner.logprobs(batch).sum(-1)


# --- per-token log-probs -------------------------------------------------------------------------


def test_logprobs_match_a_full_forward_of_each_row_alone(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config())
    batch = mixed_batch(processor, [0.0, 0.0, 0.0])
    logp = learner.logprobs(batch)
    mask = batch.inputs.completion_mask
    assert logp.shape == mask.shape
    assert torch.all(logp[~mask] == 0) and torch.all(logp[mask] < 0)
    image_token = base_model.config.image_token_id
    for row in range(3):
        alone = select_rows(batch.inputs, [row], spatial_merge_size=2)
        n = int(alone.completion_mask.sum())
        ids = alone.input_ids[:, : alone.prompt_lengths[0] + n]  # no padding at all
        with torch.no_grad():
            full = base_model(
                input_ids=ids,
                pixel_values=alone.pixel_values,
                image_grid_thw=alone.image_grid_thw,
                mm_token_type_ids=(ids == image_token).int(),
            ).logits.log_softmax(-1)
        expected = full[0, -n - 1 : -1].gather(-1, ids[0, -n:].unsqueeze(-1)).squeeze(-1)
        assert torch.allclose(logp[row, :n], expected, atol=1e-5), row


def test_entropy_is_read_from_the_same_logits_and_respects_grammar_masks(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config())
    batch = group_batch(processor, [0.0, 0.0])
    logp, entropy = logprobs_and_entropy(learner.logprob_fn, learner.model, batch, grad=False)
    assert torch.equal(logp, learner.logprobs(batch))
    vocab = learner.vocab_size
    assert entropy is not None and entropy.shape == logp.shape
    assert torch.all(entropy > 0) and torch.all(entropy <= torch.log(torch.tensor(float(vocab))) + 1e-5)
    # a structured-output mask allowing 4 tokens (the sampled one among them) renormalises over those
    allowed = torch.zeros(2, logp.shape[1], vocab, dtype=torch.bool)
    allowed[..., 10:14] = True
    allowed[..., 20:24] = True
    masked = LearnerBatch(inputs=batch.inputs, advantages=batch.advantages, allowed=allowed)
    logp_m, entropy_m = logprobs_and_entropy(learner.logprob_fn, learner.model, masked, grad=False)
    on = batch.inputs.completion_mask
    assert torch.all(logp_m[on] > logp[on]) and torch.all(entropy_m[on] <= torch.log(torch.tensor(8.0)) + 1e-5)


# --- updates -------------------------------------------------------------------------------------


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_update_moves_a_completion_logprob_with_the_sign_of_its_advantage(base_model, processor, sign: float) -> None:
    learner = Learner(tiny_model(base_model), config())
    batch = group_batch(processor, [sign])
    before = sequence_logprobs(learner, batch)
    metrics = learner.update(batch)
    after = sequence_logprobs(learner, batch)
    assert sign * (after - before).item() > 1e-4
    assert metrics["train/grad_norm"] > 0 and metrics["train/tokens"] == 3
    # one pass, no behaviour log-probs given: the ratio is exactly 1 and nothing is clipped
    assert metrics["train/ratio_min"] == metrics["train/ratio_max"] == 1.0 and metrics["train/clip_frac"] == 0


def test_group_update_separates_better_from_worse_completion(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config())
    batch = group_batch(processor, [1.0, -1.0])
    before = sequence_logprobs(learner, batch)
    learner.update(batch)
    after = sequence_logprobs(learner, batch)
    assert (after[0] - after[1]) - (before[0] - before[1]) > 1e-4
    assert after[0] > before[0] and after[1] < before[1]


def test_zero_advantages_without_kl_leave_every_parameter_unchanged(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config())
    learner.update(
        group_batch(processor, [1.0, -1.0])
    )  # AdamW now has momentum: a zero-gradient step would still move it
    before = {n: p.detach().clone() for n, p in learner.model.named_parameters()}
    metrics = learner.update(group_batch(processor, [0.0, 0.0, 0.0]))
    for name, param in learner.model.named_parameters():
        assert torch.equal(param, before[name]), name
    assert metrics["train/skipped_sequences"] == 3 and metrics["train/grad_norm"] == 0


def test_only_lora_parameters_of_the_language_model_change(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config())
    before = {n: p.detach().clone() for n, p in learner.model.named_parameters()}
    learner.update(group_batch(processor, [1.0, -1.0]))
    changed = {n for n, p in learner.model.named_parameters() if not torch.equal(p, before[n])}
    assert changed, "nothing moved"
    assert all("lora_" in n and ".language_model." in n for n in changed), sorted(changed)[:5]
    trainable = {n for n, p in learner.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n and ".language_model." in n for n in trainable)
    assert not any(".visual." in n for n in trainable)


def test_micro_batches_accumulate_to_the_full_batch_step(base_model, processor) -> None:
    advantages = [0.5, -1.0, 0.5]
    whole = Learner(tiny_model(base_model), config(micro_batch_size=8))
    split = Learner(tiny_model(base_model), config(micro_batch_size=1))
    m_whole = whole.update(mixed_batch(processor, advantages))
    m_split = split.update(mixed_batch(processor, advantages))
    assert m_whole["train/loss"] == pytest.approx(m_split["train/loss"], rel=1e-5)
    assert m_whole["train/grad_norm"] == pytest.approx(m_split["train/grad_norm"], rel=1e-4)
    a, b = whole.trainable_state(), split.trainable_state()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_gradient_checkpointing_gives_the_same_step(base_model, processor) -> None:
    plain = Learner(tiny_model(base_model), config())
    ckpt = Learner(tiny_model(base_model), config(gradient_checkpointing=True))
    m_plain = plain.update(group_batch(processor, [1.0, -1.0]))
    m_ckpt = ckpt.update(group_batch(processor, [1.0, -1.0]))
    assert m_plain["train/grad_norm"] == pytest.approx(m_ckpt["train/grad_norm"], rel=1e-5)
    a, b = plain.trainable_state(), ckpt.trainable_state()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_kl_to_the_base_model_is_zero_at_first_and_grows(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config(kl_coef=0.1))
    batch = group_batch(processor, [1.0, -1.0])
    first = learner.update(batch)
    assert first["train/kl"] == pytest.approx(0.0, abs=1e-10)  # LoRA B starts at 0: adapter == base
    second = learner.update(batch)
    assert second["train/kl"] > 0
    without = learner.logprobs(batch, adapter=False)
    assert not torch.allclose(without, learner.logprobs(batch))
    # with kl_coef > 0, zero-advantage rows are not skipped: the KL term still has a gradient
    assert learner.update(group_batch(processor, [0.0, 0.0]))["train/skipped_sequences"] == 0


def test_stale_behaviour_logprobs_give_ratios_and_clipping(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config(clip_eps_low=0.1, clip_eps_high=0.1))
    batch = group_batch(processor, [1.0, -1.0])
    current = learner.logprobs(batch)
    # the sampler saw these tokens as much less likely (ratio e^1 > 1.1) with positive advantage
    stale = replace(batch, behaviour_logprobs=current - 1.0)
    metrics = learner.update(stale)
    assert metrics["train/ratio_min"] == pytest.approx(torch.e, rel=1e-4)
    assert metrics["train/behaviour_logprob_gap"] == pytest.approx(1.0, rel=1e-4)
    # A=+1 with ratio above 1 + eps is clipped (3 tokens); A=-1 with ratio above is not (2 tokens)
    assert metrics["train/clip_frac"] == pytest.approx(3 / 5)


def test_the_learner_passes_its_importance_level_to_the_objective(base_model, processor) -> None:
    """vLLM's log-probs off by +1, 0, -1 and +0.5, -0.5 nats: every completion's mean log-ratio is 0,
    so at sequence level (GSPO) each ratio is 1 and nothing is clipped; per token the clip acts."""
    batch = group_batch(processor, [1.0, -1.0])
    offsets = torch.tensor([[1.0, 0.0, -1.0], [0.5, -0.5, 0.0]])
    behaviour = Learner(tiny_model(base_model), config()).logprobs(batch) - offsets
    stale = replace(batch, behaviour_logprobs=behaviour)
    seq = Learner(tiny_model(base_model), config(importance_level="sequence")).update(stale)
    tok = Learner(tiny_model(base_model), config()).update(stale)
    assert seq["train/ratio_min"] == pytest.approx(1.0, abs=1e-4) and seq["train/ratio_max"] == pytest.approx(
        1.0, abs=1e-4
    )
    assert seq["train/clip_frac"] == 0.0 and tok["train/clip_frac"] > 0.0
    assert tok["train/ratio_max"] == pytest.approx(torch.e, rel=1e-4)


def test_a_tis_cap_truncates_the_importance_weight_in_the_update(base_model, processor) -> None:
    """The learner passes its ``tis_cap`` to the objective: vLLM saw every token e^1 times less
    likely, a cap of 2 truncates all of them (without the cap none is truncated and the PPO clip
    takes over), and the capped step's gradient is the policy gradient scaled by the cap."""
    batch = group_batch(processor, [1.0, -1.0])
    capped = Learner(tiny_model(base_model), config(tis_cap=2.0))
    uncapped = Learner(tiny_model(base_model), config())
    stale = replace(batch, behaviour_logprobs=capped.logprobs(batch) - 1.0)
    m_capped, m_uncapped = capped.update(stale), uncapped.update(stale)
    assert m_capped["train/tis_frac"] == 1.0 and m_uncapped["train/tis_frac"] == 0.0
    assert m_capped["train/ratio_min"] == pytest.approx(torch.e, rel=1e-4)  # vLLM's ratio, still reported
    on_policy = Learner(tiny_model(base_model), config(tis_cap=2.0)).update(batch)
    assert m_capped["train/loss"] == pytest.approx(2.0 * on_policy["train/loss"], rel=1e-4)


def test_the_learner_scores_and_measures_entropy_at_its_temperature(base_model, processor) -> None:
    batch = group_batch(processor, [1.0, -1.0])
    hot, cold = Learner(tiny_model(base_model), config()), Learner(tiny_model(base_model), config(temperature=0.5))
    assert not torch.allclose(hot.logprobs(batch), cold.logprobs(batch))
    assert cold.update(batch)["train/entropy"] < hot.update(batch)["train/entropy"]  # a sharper distribution


def test_warmup_schedule_and_completion_length_limit(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config(warmup_steps=4))
    skipped = group_batch(processor, [0.0, 0.0])  # no row needs a forward pass: the schedule alone
    lrs = [learner.update(skipped)["train/lr"] for _ in range(5)]
    assert lrs == pytest.approx([2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3])
    # a completion longer than the run's sampling budget (8 tokens here) is refused by the learner
    too_long = group_batch(processor, [1.0, -1.0], completions=[list(range(10, 19)), [20, 21]])
    with pytest.raises(ValueError, match="a completion has 9 tokens, more than max_tokens=8"):
        Learner(tiny_model(base_model), config(max_tokens=8)).update(too_long)


def test_bf16_base_model_trains_a_float32_adapter(base_model, processor) -> None:
    """The GPU path: bf16 weights, LoRA parameters (and AdamW state) kept in float32."""
    learner = Learner(tiny_model(base_model).to(torch.bfloat16), config())
    assert {p.dtype for p in learner.params} == {torch.float32}
    batch = group_batch(processor, [1.0, -1.0])
    before = sequence_logprobs(learner, batch)
    learner.update(batch)
    after = sequence_logprobs(learner, batch)
    assert (after[0] - after[1]) > (before[0] - before[1])


def test_a_peft_model_or_missing_targets_are_refused(base_model) -> None:
    learner = Learner(tiny_model(base_model), config())
    with pytest.raises(ValueError, match="base model"):
        Learner(learner.model, config())
    with pytest.raises(ValueError):
        Learner(tiny_model(base_model), config(lora_target_modules=("no_such_proj",)))


def test_a_completion_holding_a_vision_placeholder_is_left_out_not_fatal(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config())
    batch = group_batch(processor, [1.0, -1.0], completions=[[10, base_model.config.image_token_id, 12], [20, 21]])
    metrics = learner.update(batch)
    assert metrics["train/unscorable_sequences"] == 1 and metrics["train/skipped_sequences"] == 1
    assert metrics["train/tokens"] == 2 and metrics["train/grad_norm"] > 0


@pytest.mark.slow
def test_grpo_loop_learns_a_one_token_bandit(base_model, processor) -> None:
    """Sample one of 16 tokens (a grammar's choice), reward 4 of them, update: the rewarded mass rises
    far above chance."""
    learner = Learner(
        tiny_model(base_model), config(learning_rate=2e-2, max_tokens=8)
    )  # Adam: the normaliser scales no step
    png = noise_png(64, 64, seed=1)
    choices = torch.arange(100, 116)
    target = torch.zeros(len(choices), dtype=torch.bool)
    target[:4] = True
    allowed = torch.zeros(learner.vocab_size, dtype=torch.bool)
    allowed[choices] = True

    def batch(picks: list[int], **fields) -> LearnerBatch:
        inputs = build_batch(processor, [SampleRecord(GOAL, [], [png], [int(choices[i])]) for i in picks])
        mask = allowed.expand(len(picks), 1, -1)
        return LearnerBatch(inputs=inputs, advantages=torch.zeros(len(picks)), allowed=mask, **fields)

    every_choice = batch(list(range(len(choices))))
    generator = torch.Generator().manual_seed(0)
    start = learner.logprobs(every_choice)[:, 0].exp()
    probs = start
    for _ in range(8):
        sampled = torch.multinomial(probs, 8, replacement=True, generator=generator)
        behaviour = probs[sampled].log().unsqueeze(1)
        update = replace(batch(sampled.tolist()), advantages=group_advantages(target[sampled].float()))
        learner.update(replace(update, behaviour_logprobs=behaviour))
        probs = learner.logprobs(every_choice)[:, 0].exp()
    assert float(start.sum()) == pytest.approx(1.0, abs=1e-4)  # the mask renormalises over the 16
    assert float(start[target].sum()) < 0.45
    assert float(probs[target].sum()) > 0.8


# --- adapters ------------------------------------------------------------------------------------


def test_saved_adapter_has_language_model_keys_only_and_loads_back(base_model, processor, tmp_path) -> None:
    learner = Learner(tiny_model(base_model), config(lora_r=4, lora_alpha=8.0))
    learner.update(group_batch(processor, [1.0, -1.0]))
    path = learner.weights.save_adapter(tmp_path / "v1")
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in path.iterdir()}
    adapter_config = json.loads((path / "adapter_config.json").read_text())
    assert adapter_config["r"] == 4 and adapter_config["lora_alpha"] == 8.0
    with safe_open(str(path / "adapter_model.safetensors"), framework="pt") as f:
        keys = list(f.keys())
    # 2 layers x 7 projections x (A, B)
    assert len(keys) == 28
    assert all(k.startswith("base_model.model.model.language_model.layers.") for k in keys), keys[:3]
    assert all(k.endswith((".lora_A.weight", ".lora_B.weight")) for k in keys)

    other = Learner(tiny_model(base_model), config(lora_r=4, lora_alpha=8.0))
    other.weights.load_adapter(path)
    batch = group_batch(processor, [1.0, -1.0])
    assert torch.equal(other.logprobs(batch), learner.logprobs(batch))


@pytest.mark.slow
def test_vllm_lora_loader_accepts_the_saved_adapter(base_model, tmp_path) -> None:
    """vLLM's own adapter reader parses every saved tensor into a language-model module."""
    from vllm.lora.lora_model import LoRAModel
    from vllm.lora.peft_helper import PEFTHelper

    learner = Learner(tiny_model(base_model), config(lora_r=4, lora_alpha=8.0))
    path = learner.weights.save_adapter(tmp_path / "v1")
    helper = PEFTHelper.from_local_dir(str(path), max_position_embeddings=512)
    expected = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    lora = LoRAModel.from_local_checkpoint(str(path), expected, helper, lora_model_id=1, device="cpu")
    assert len(lora.loras) == 14
    assert all(".language_model." in name or name.startswith("language_model.") for name in lora.loras), list(
        lora.loras
    )[:3]
