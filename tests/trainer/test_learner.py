"""The LoRA learner on a tiny random Qwen3-VL built in the test (token ids and pixels fed directly)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from safetensors import safe_open
from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

from halo.settings.trainer import LearnerConfig
from halo_trainer.learner import Learner, LearnerBatch, batch_from_token_ids, logprobs_and_entropy, select_rows
from halo_trainer.objective import group_advantages

VOCAB = 96
PAD, VISION_START, VISION_END, IMAGE, VIDEO = 0, 90, 91, 92, 93
PATCH_DIM = 3 * 2 * 16 * 16  # channels * temporal_patch_size * patch_size^2


def tiny_model(seed: int = 0) -> Qwen3VLForConditionalGeneration:
    """Qwen3-VL's real architecture at toy sizes: 2 text layers of width 64, a 1-block vision tower."""
    config = Qwen3VLConfig(
        text_config={
            "vocab_size": VOCAB,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 32,
            "max_position_embeddings": 512,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [6, 5, 5]},
            "initializer_range": 0.1,  # not so small that every log-prob is log(1/V)
        },
        vision_config={
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": 64,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "deepstack_visual_indexes": [0],
            "num_position_embeddings": 64,
        },
        image_token_id=IMAGE,
        video_token_id=VIDEO,
        vision_start_token_id=VISION_START,
        vision_end_token_id=VISION_END,
    )
    torch.manual_seed(seed)
    return Qwen3VLForConditionalGeneration(config).eval()


def image(h: int, w: int, seed: int) -> tuple[list[int], torch.Tensor, list[int]]:
    """Placeholder tokens, patches and grid of one image of h x w patches (merged 2 x 2 into tokens)."""
    g = torch.Generator().manual_seed(seed)
    tokens = [VISION_START] + [IMAGE] * (h * w // 4) + [VISION_END]
    return tokens, torch.randn(h * w, PATCH_DIM, generator=g), [1, h, w]


def group_batch(advantages: list[float], completions: list[list[int]] | None = None) -> LearnerBatch:
    """One prompt with a screenshot, several completions of it (a step group)."""
    tokens, pixels, grid = image(4, 4, seed=1)
    prompt = [1, 2, *tokens, 5, 6, 7]
    completions = completions or [[10, 11, 12], [20, 21], [30, 31, 32, 33], [40]][: len(advantages)]
    n = len(completions)
    inputs = batch_from_token_ids(
        [prompt] * n,
        completions,
        pad_token_id=PAD,
        image_token_id=IMAGE,
        pixel_values=pixels.repeat(n, 1),
        image_grid_thw=torch.tensor([grid] * n),
    )
    return LearnerBatch(inputs=inputs, advantages=torch.tensor(advantages))


def mixed_batch(advantages: list[float]) -> LearnerBatch:
    """Rows with different prompts: two image sizes and a text-only row (micro-batches must split images right)."""
    t1, p1, g1 = image(4, 4, seed=2)
    t2, p2, g2 = image(4, 6, seed=3)
    prompts = [[1, *t1, 3], [4, 5, 6], [1, *t2, 7, 8]]
    completions = [[10, 11], [12, 13, 14], [15]]
    inputs = batch_from_token_ids(
        prompts,
        completions,
        pad_token_id=PAD,
        image_token_id=IMAGE,
        pixel_values=torch.cat([p1, p2]),
        image_grid_thw=torch.tensor([g1, g2]),
    )
    return LearnerBatch(inputs=inputs, advantages=torch.tensor(advantages))


def config(**overrides) -> LearnerConfig:
    base = {"learning_rate": 1e-3, "lora_r": 4, "lora_alpha": 8.0, "max_completion_tokens": 8}
    return LearnerConfig(**{**base, **overrides})


def sequence_logprobs(learner: Learner, batch: LearnerBatch) -> torch.Tensor:
    return learner.logprobs(batch).sum(-1)


# --- per-token log-probs -------------------------------------------------------------------------


def test_logprobs_match_a_full_forward_of_each_row_alone() -> None:
    learner = Learner(tiny_model(), config())
    batch = mixed_batch([0.0, 0.0, 0.0])
    logp = learner.logprobs(batch)
    mask = batch.inputs.completion_mask
    assert logp.shape == mask.shape
    assert torch.all(logp[~mask] == 0) and torch.all(logp[mask] < 0)
    model = tiny_model()
    for row in range(3):
        alone = select_rows(batch.inputs, [row], spatial_merge_size=2)
        n = int(alone.completion_mask.sum())
        ids = alone.input_ids[:, : alone.prompt_lengths[0] + n]  # no padding at all
        with torch.no_grad():
            kwargs = {"input_ids": ids}
            if alone.pixel_values is not None:
                kwargs |= {
                    "pixel_values": alone.pixel_values,
                    "image_grid_thw": alone.image_grid_thw,
                    "mm_token_type_ids": (ids == IMAGE).int(),
                }
            full = model(**kwargs).logits.log_softmax(-1)
        expected = full[0, -n - 1 : -1].gather(-1, ids[0, -n:].unsqueeze(-1)).squeeze(-1)
        assert torch.allclose(logp[row, :n], expected, atol=1e-5), row


def test_entropy_is_read_from_the_same_logits_and_respects_grammar_masks() -> None:
    learner = Learner(tiny_model(), config())
    batch = group_batch([0.0, 0.0])
    logp, entropy = logprobs_and_entropy(learner.logprob_fn, learner.model, batch, grad=False)
    assert torch.equal(logp, learner.logprobs(batch))
    assert entropy is not None and entropy.shape == logp.shape
    assert torch.all(entropy > 0) and torch.all(entropy <= torch.log(torch.tensor(float(VOCAB))) + 1e-5)
    # a structured-output mask allowing 4 tokens (the sampled one among them) renormalises over those
    allowed = torch.zeros(2, logp.shape[1], VOCAB, dtype=torch.bool)
    allowed[..., 10:14] = True
    allowed[..., 20:24] = True
    masked = LearnerBatch(inputs=batch.inputs, advantages=batch.advantages, allowed=allowed)
    logp_m, entropy_m = logprobs_and_entropy(learner.logprob_fn, learner.model, masked, grad=False)
    on = batch.inputs.completion_mask
    assert torch.all(logp_m[on] > logp[on]) and torch.all(entropy_m[on] <= torch.log(torch.tensor(8.0)) + 1e-5)


def test_batch_from_token_ids_layout() -> None:
    inputs = batch_from_token_ids([[1, 2, 3], [3]], [[4], [5, 6]], pad_token_id=PAD, image_token_id=IMAGE)
    assert inputs.input_ids.tolist() == [[1, 2, 3, 4], [3, 5, 6, 0]]
    assert inputs.attention_mask.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert inputs.completion_ids.tolist() == [[4, 0], [5, 6]]
    assert inputs.completion_mask.tolist() == [[True, False], [True, True]]
    assert inputs.completion_positions.tolist() == [[3, 0], [1, 2]]
    with pytest.raises(ValueError, match="empty"):
        batch_from_token_ids([[]], [[2]], pad_token_id=PAD, image_token_id=IMAGE)


def test_select_rows_keeps_each_rows_images_and_rejects_mismatches() -> None:
    batch = mixed_batch([0.0, 0.0, 0.0]).inputs
    last = select_rows(batch, [2], spatial_merge_size=2)
    assert last.image_grid_thw.tolist() == [[1, 4, 6]] and torch.equal(last.pixel_values, batch.pixel_values[16:])
    text_only = select_rows(batch, [1], spatial_merge_size=2)
    assert text_only.pixel_values is None and text_only.image_grid_thw is None
    bad = replace(batch, image_grid_thw=batch.image_grid_thw[:1])
    with pytest.raises(ValueError, match="without an image"):
        select_rows(bad, [0], spatial_merge_size=2)


# --- updates -------------------------------------------------------------------------------------


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_update_moves_a_completion_logprob_with_the_sign_of_its_advantage(sign: float) -> None:
    learner = Learner(tiny_model(), config())
    batch = group_batch([sign])
    before = sequence_logprobs(learner, batch)
    metrics = learner.update(batch)
    after = sequence_logprobs(learner, batch)
    assert sign * (after - before).item() > 1e-4
    assert metrics["train/grad_norm"] > 0 and metrics["train/tokens"] == 3
    # one pass, no behaviour log-probs given: the ratio is exactly 1 and nothing is clipped
    assert metrics["train/ratio_min"] == metrics["train/ratio_max"] == 1.0 and metrics["train/clip_frac"] == 0


def test_group_update_separates_better_from_worse_completion() -> None:
    learner = Learner(tiny_model(), config())
    batch = group_batch([1.0, -1.0])
    before = sequence_logprobs(learner, batch)
    learner.update(batch)
    after = sequence_logprobs(learner, batch)
    assert (after[0] - after[1]) - (before[0] - before[1]) > 1e-4
    assert after[0] > before[0] and after[1] < before[1]


def test_zero_advantages_without_kl_leave_every_parameter_unchanged() -> None:
    learner = Learner(tiny_model(), config())
    learner.update(group_batch([1.0, -1.0]))  # AdamW now has momentum: a zero-gradient step would still move it
    before = {n: p.detach().clone() for n, p in learner.model.named_parameters()}
    metrics = learner.update(group_batch([0.0, 0.0, 0.0]))
    for name, param in learner.model.named_parameters():
        assert torch.equal(param, before[name]), name
    assert metrics["train/skipped_sequences"] == 3 and metrics["train/grad_norm"] == 0


def test_only_lora_parameters_of_the_language_model_change() -> None:
    learner = Learner(tiny_model(), config())
    before = {n: p.detach().clone() for n, p in learner.model.named_parameters()}
    learner.update(group_batch([1.0, -1.0]))
    changed = {n for n, p in learner.model.named_parameters() if not torch.equal(p, before[n])}
    assert changed, "nothing moved"
    assert all("lora_" in n and ".language_model." in n for n in changed), sorted(changed)[:5]
    trainable = {n for n, p in learner.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n and ".language_model." in n for n in trainable)
    assert not any(".visual." in n for n in trainable)


def test_micro_batches_accumulate_to_the_full_batch_step() -> None:
    advantages = [0.5, -1.0, 0.5]
    whole = Learner(tiny_model(), config(micro_batch_size=8))
    split = Learner(tiny_model(), config(micro_batch_size=1))
    m_whole = whole.update(mixed_batch(advantages))
    m_split = split.update(mixed_batch(advantages))
    assert m_whole["train/loss"] == pytest.approx(m_split["train/loss"], rel=1e-5)
    assert m_whole["train/grad_norm"] == pytest.approx(m_split["train/grad_norm"], rel=1e-4)
    a, b = whole.trainable_state(), split.trainable_state()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_gradient_checkpointing_gives_the_same_step() -> None:
    plain = Learner(tiny_model(), config())
    ckpt = Learner(tiny_model(), config(gradient_checkpointing=True))
    m_plain = plain.update(group_batch([1.0, -1.0]))
    m_ckpt = ckpt.update(group_batch([1.0, -1.0]))
    assert m_plain["train/grad_norm"] == pytest.approx(m_ckpt["train/grad_norm"], rel=1e-5)
    a, b = plain.trainable_state(), ckpt.trainable_state()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_kl_to_the_base_model_is_zero_at_first_and_grows() -> None:
    learner = Learner(tiny_model(), config(kl_coef=0.1))
    batch = group_batch([1.0, -1.0])
    first = learner.update(batch)
    assert first["train/kl"] == pytest.approx(0.0, abs=1e-10)  # LoRA B starts at 0: adapter == base
    second = learner.update(batch)
    assert second["train/kl"] > 0
    base = learner.logprobs(batch, adapter=False)
    assert not torch.allclose(base, learner.logprobs(batch))
    # with kl_coef > 0, zero-advantage rows are not skipped: the KL term still has a gradient
    assert learner.update(group_batch([0.0, 0.0]))["train/skipped_sequences"] == 0


def test_stale_behaviour_logprobs_give_ratios_and_clipping() -> None:
    learner = Learner(tiny_model(), config(clip_eps_low=0.1, clip_eps_high=0.1))
    batch = group_batch([1.0, -1.0])
    current = learner.logprobs(batch)
    # the sampler saw these tokens as much less likely (ratio e^1 > 1.1) with positive advantage
    stale = replace(batch, behaviour_logprobs=current - 1.0)
    metrics = learner.update(stale)
    assert metrics["train/ratio_min"] == pytest.approx(torch.e, rel=1e-4)
    assert metrics["train/behaviour_logprob_gap"] == pytest.approx(1.0, rel=1e-4)
    # A=+1 with ratio above 1 + eps is clipped (3 tokens); A=-1 with ratio above is not (2 tokens)
    assert metrics["train/clip_frac"] == pytest.approx(3 / 5)


def test_warmup_schedule_and_completion_length_limit() -> None:
    learner = Learner(tiny_model(), config(warmup_steps=4))
    lrs = [learner.update(group_batch([1.0, -1.0]))["train/lr"] for _ in range(5)]
    assert lrs == pytest.approx([2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3])
    with pytest.raises(ValueError, match="max_completion_tokens"):
        Learner(tiny_model(), config(max_completion_tokens=2)).update(group_batch([1.0, -1.0]))


def test_bf16_base_model_trains_a_float32_adapter() -> None:
    """The GPU path: bf16 weights, LoRA parameters (and AdamW state) kept in float32."""
    learner = Learner(tiny_model().to(torch.bfloat16), config())
    assert {p.dtype for p in learner.params} == {torch.float32}
    batch = group_batch([1.0, -1.0])
    before = sequence_logprobs(learner, batch)
    learner.update(batch)
    after = sequence_logprobs(learner, batch)
    assert (after[0] - after[1]) > (before[0] - before[1])


def test_a_peft_model_or_missing_targets_are_refused() -> None:
    learner = Learner(tiny_model(), config())
    with pytest.raises(ValueError, match="base model"):
        Learner(learner.model, config())
    with pytest.raises(ValueError):
        Learner(tiny_model(), config(lora_target_modules=("no_such_proj",)))


def test_a_completion_holding_a_vision_placeholder_is_left_out_not_fatal() -> None:
    learner = Learner(tiny_model(), config())
    batch = group_batch([1.0, -1.0], completions=[[10, IMAGE, 12], [20, 21]])
    metrics = learner.update(batch)
    assert metrics["train/unscorable_sequences"] == 1 and metrics["train/skipped_sequences"] == 1
    assert metrics["train/tokens"] == 2 and metrics["train/grad_norm"] > 0


def test_grpo_loop_learns_a_one_token_bandit() -> None:
    """Sample from the policy, reward 16 of 90 tokens, update: the rewarded mass rises far above chance."""
    learner = Learner(tiny_model(), config(learning_rate=2e-2, max_completion_tokens=1))
    tokens, pixels, grid = image(4, 4, seed=1)
    prompt = [1, 2, *tokens, 5, 6, 7]
    choices = 90  # every token but the vision specials
    target = torch.zeros(choices, dtype=torch.bool)
    target[10:26] = True

    def inputs(completions: list[int]):
        n = len(completions)
        return batch_from_token_ids(
            [prompt] * n,
            [[t] for t in completions],
            pad_token_id=PAD,
            image_token_id=IMAGE,
            pixel_values=pixels.repeat(n, 1),
            image_grid_thw=torch.tensor([grid] * n),
        )

    every_token = inputs(list(range(choices)))
    generator = torch.Generator().manual_seed(0)
    start = learner.logprobs(every_token)[:, 0].exp()
    for _ in range(8):
        probs = learner.logprobs(every_token)[:, 0].exp()
        sampled = torch.multinomial(probs, 8, replacement=True, generator=generator)
        advantages = group_advantages(target[sampled].float())
        behaviour = probs[sampled].log().unsqueeze(1)
        learner.update(
            LearnerBatch(inputs=inputs(sampled.tolist()), advantages=advantages, behaviour_logprobs=behaviour)
        )
    end = learner.logprobs(every_token)[:, 0].exp()
    assert float(start[target].sum()) < 0.3
    assert float(end[target].sum()) > 0.7


# --- adapters ------------------------------------------------------------------------------------


def test_saved_adapter_has_language_model_keys_only_and_loads_back(tmp_path) -> None:
    learner = Learner(tiny_model(), config(lora_r=4, lora_alpha=8.0))
    learner.update(group_batch([1.0, -1.0]))
    path = learner.save_adapter(tmp_path / "v1")
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in path.iterdir()}
    adapter_config = json.loads((path / "adapter_config.json").read_text())
    assert adapter_config["r"] == 4 and adapter_config["lora_alpha"] == 8.0
    with safe_open(str(path / "adapter_model.safetensors"), framework="pt") as f:
        keys = list(f.keys())
    # 2 layers x 7 projections x (A, B)
    assert len(keys) == 28
    assert all(k.startswith("base_model.model.model.language_model.layers.") for k in keys), keys[:3]
    assert all(k.endswith((".lora_A.weight", ".lora_B.weight")) for k in keys)

    other = Learner(tiny_model(), config(lora_r=4, lora_alpha=8.0))
    other.load_adapter(path)
    batch = group_batch([1.0, -1.0])
    assert torch.equal(other.logprobs(batch), learner.logprobs(batch))


def test_from_pretrained(tmp_path) -> None:
    tiny_model().save_pretrained(tmp_path / "model")
    learner = Learner.from_pretrained(tmp_path / "model", config())
    reference = Learner(tiny_model(), config())
    batch = group_batch([1.0])
    assert torch.allclose(learner.logprobs(batch), reference.logprobs(batch))


@pytest.mark.slow
def test_vllm_lora_loader_accepts_the_saved_adapter(tmp_path) -> None:
    """vLLM's own adapter reader parses every saved tensor into a language-model module."""
    from vllm.lora.lora_model import LoRAModel
    from vllm.lora.peft_helper import PEFTHelper

    learner = Learner(tiny_model(), config(lora_r=4, lora_alpha=8.0))
    path = learner.save_adapter(tmp_path / "v1")
    helper = PEFTHelper.from_local_dir(str(path), max_position_embeddings=512)
    expected = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    lora = LoRAModel.from_local_checkpoint(str(path), expected, helper, lora_model_id=1, device="cpu")
    assert len(lora.loras) == 14
    assert all(".language_model." in name or name.startswith("language_model.") for name in lora.loras), list(
        lora.loras
    )[:3]
