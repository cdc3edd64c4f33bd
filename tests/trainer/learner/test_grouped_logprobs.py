"""One prompt pass per group (``halo_model.grouped``) against the per-row path, on the tiny Qwen3-VL
in float32: the same log-probs, the same gradients (LoRA and full-weight vision parameters), the
same learner steps; and the comparison is shown to catch a wrong position or a leaking mask."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from halo_model.grouped import PackedBatch, grouped_logprobs, pack, packed_hidden, prompt_groups
from halo_model.inputs import SampleRecord, build_batch
from halo_model.loading import load_processor
from halo_model.logprobs import completion_logprobs, token_logprobs
from halo_trainer.learner.dpo_update import dpo_update
from halo_trainer.learner.learner import Learner
from halo_trainer.learner.learner_batch import LearnerBatch, group_micro_batches, logprobs_and_entropy
from tests.conftest import noise_png
from tests.trainer.learner.test_learner import GOAL, config, tiny_model

OTHER_GOAL = "Open the second tab and read it."
# Row: (goal, screenshot seed, completion). Rows 0-3 share a prompt (row 3 repeats row 0's
# completion), rows 4-5 share another, row 6 has row 0's prompt text but its own screenshot.
ROWS = [
    (GOAL, 1, [10, 11, 12]),
    (GOAL, 1, [20, 21]),
    (GOAL, 1, [30, 31, 32, 33, 34]),
    (GOAL, 1, [10, 11, 12]),
    (OTHER_GOAL, 3, [40, 41, 42]),
    (OTHER_GOAL, 3, [43]),
    (GOAL, 2, [50, 51]),
]
GROUPS = [[0, 1, 2, 3], [4, 5], [6]]


@pytest.fixture(scope="module")
def processor(tiny_model_dir):
    return load_processor(tiny_model_dir)


def records(rows=ROWS) -> list[SampleRecord]:
    return [SampleRecord(goal, [], [noise_png(64, 64, seed=seed)], list(c)) for goal, seed, c in rows]


@pytest.fixture(scope="module")
def batch(processor):
    return build_batch(processor, records())


def grammar(batch, vocab: int) -> torch.Tensor:
    """A structured-output mask: each completion token among a few allowed ones."""
    allowed = torch.zeros((*batch.completion_ids.shape, vocab), dtype=torch.bool)
    allowed[..., 5:60:3] = True
    allowed.scatter_(2, batch.completion_ids.unsqueeze(-1), True)
    return allowed


def trained_learner(base_model, **overrides) -> Learner:
    """A learner whose LoRA B is not zero, so that every LoRA matrix has a gradient."""
    learner = Learner(tiny_model(base_model), config(**overrides))
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in learner.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.05)
    return learner


def gradients(learner: Learner, fn, batch, weights: torch.Tensor, **kwargs) -> tuple[torch.Tensor, dict]:
    """Log-probs and the gradient of ``sum(weights * logp)`` for every trained parameter."""
    learner.model.zero_grad(set_to_none=True)
    learner.model.train()
    logp = fn(learner.model, batch, grad=True, **kwargs)
    (weights * logp).sum().backward()
    learner.model.eval()
    grads = {n: p.grad.clone() for n, p in learner.model.named_parameters() if p.requires_grad}
    return logp.detach(), grads


def assert_same_gradients(a: dict, b: dict) -> None:
    """Each parameter's gradient equal to 1e-5 of its largest entry; most of them not 0 (a few are,
    on both paths: the deepstack merger fed after the last decoder layer reaches only image tokens'
    hidden states, which predict nothing)."""
    assert a.keys() == b.keys()
    zero = [n for n in a if torch.count_nonzero(b[n]) == 0]
    assert len(zero) < len(a) / 4, zero
    for name in a:
        scale = b[name].abs().max()
        assert (a[name] - b[name]).abs().max() <= 1e-5 * scale, name


# --- grouping and packing ------------------------------------------------------------------------


def test_rows_are_grouped_by_prompt_ids_and_pixels(batch) -> None:
    assert prompt_groups(batch, spatial_merge_size=2) == GROUPS


def test_packing_holds_each_prompt_and_its_pixels_once(batch) -> None:
    packed = pack(batch, spatial_merge_size=2)
    assert packed.input_ids.shape[0] == len(GROUPS)
    patches = int(batch.image_grid_thw[0].prod())
    assert packed.pixel_values.shape[0] == len(GROUPS) * patches
    assert batch.pixel_values.shape[0] == len(GROUPS) * patches  # three screenshots, each held once
    p = batch.prompt_lengths[0]
    # the repeated completion of row 3 is packed once: three distinct completions after the prompt
    assert packed.attention_mask[0].sum() == p + 3 + 2 + 5
    assert packed.segments[0, : p + 10].unique().tolist() == [0, 1, 2, 3]
    assert torch.equal(packed.sources[3], packed.sources[0])
    assert packed.completion_ids.shape == batch.completion_ids.shape
    assert torch.equal(packed.completion_ids, batch.completion_ids)


def test_micro_batches_keep_a_group_together() -> None:
    groups = [[0, 1, 2, 3, 4, 5], [6, 7, 8], [9], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]]
    assert group_micro_batches(groups, range(20), 8) == [
        [0, 1, 2, 3, 4, 5],
        [6, 7, 8, 9],
        [10, 11, 12, 13, 14, 15, 16, 17],
        [18, 19],
    ]
    # left-out rows (zero advantage) free room; every micro-batch is sorted
    assert group_micro_batches([[4, 0, 2], [1, 3]], [0, 1, 3, 4], 4) == [[0, 1, 3, 4]]


# --- log-probs and gradients ---------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("masked", [False, True])
def test_logprobs_equal_the_per_row_path(base_model, batch, temperature: float, masked: bool) -> None:
    allowed = grammar(batch, base_model.config.text_config.vocab_size) if masked else None
    per_row = completion_logprobs(base_model, batch, temperature=temperature, allowed=allowed)
    grouped = grouped_logprobs(base_model, batch, temperature=temperature, allowed=allowed)
    assert grouped.shape == per_row.shape == batch.completion_mask.shape
    assert torch.all(grouped[~batch.completion_mask] == 0)
    assert (grouped - per_row).abs().max() < 1e-5


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_lora_gradients_equal_the_per_row_path(base_model, batch, temperature: float) -> None:
    learner = trained_learner(base_model)
    allowed = grammar(batch, learner.vocab_size)
    weights = torch.randn(batch.completion_mask.shape, generator=torch.Generator().manual_seed(2))
    kwargs = {"temperature": temperature, "allowed": allowed}
    logp_row, grads_row = gradients(learner, completion_logprobs, batch, weights, **kwargs)
    logp_grp, grads_grp = gradients(learner, grouped_logprobs, batch, weights, **kwargs)
    assert (logp_grp - logp_row).abs().max() < 1e-5
    assert_same_gradients(grads_grp, grads_row)


def test_full_weight_vision_gradients_equal_the_per_row_path(base_model, batch) -> None:
    learner = trained_learner(base_model, full_weights=("vision",))
    assert any(".visual." in n for n in learner.weights.full_weight_names())
    weights = torch.randn(batch.completion_mask.shape, generator=torch.Generator().manual_seed(3))
    _, grads_row = gradients(learner, completion_logprobs, batch, weights)
    _, grads_grp = gradients(learner, grouped_logprobs, batch, weights)
    assert any(".visual." in n for n in grads_grp)
    assert_same_gradients(grads_grp, grads_row)


def test_eager_attention_gives_the_same_logprobs(base_model, batch) -> None:
    model = tiny_model(base_model)
    model.set_attn_implementation("eager")
    assert model.model.language_model.config._attn_implementation == "eager"
    per_row = completion_logprobs(model, batch, temperature=0.7)
    assert (grouped_logprobs(model, batch, temperature=0.7) - per_row).abs().max() < 1e-5


def test_the_comparison_catches_a_wrong_position_or_a_leaking_mask(base_model, batch) -> None:
    """The per-row figures above would not hide a slip: a completion position off by one, or a
    completion that sees the other completions, moves the log-probs by far more than 1e-5."""
    per_row = completion_logprobs(base_model, batch)
    packed = pack(batch, spatial_merge_size=2)
    completion = packed.segments > 0
    shifted = replace(packed, row_positions=packed.row_positions + completion.long())
    leaking = replace(packed, segments=packed.segments.masked_fill(completion, 1))
    mask = batch.completion_mask.clone()
    mask[:, 0] = False  # the first token is predicted from the prompt, which neither slip touches
    for wrong in (shifted, leaking):
        assert (grouped_logprobs(base_model, wrong) - per_row)[mask].abs().max() > 1e-3
    assert (grouped_logprobs(base_model, packed) - per_row).abs().max() < 1e-5


def test_packed_hidden_feeds_one_lm_head_call(base_model, batch) -> None:
    """The learner's entropy metric hooks ``lm_head`` and expects one call of shape [B, C, V]."""
    calls = []
    hook = base_model.lm_head.register_forward_hook(lambda _m, _i, out: calls.append(out.shape))
    try:
        grouped_logprobs(base_model, batch)
    finally:
        hook.remove()
    assert calls == [(*batch.completion_ids.shape, base_model.config.text_config.vocab_size)]
    packed = pack(batch, spatial_merge_size=2)
    with torch.no_grad():
        hidden = packed_hidden(base_model, packed)
        picked = hidden[packed.row_group.unsqueeze(-1), packed.sources]
        direct = token_logprobs(base_model, picked, packed.completion_ids, packed.completion_mask)
    assert torch.equal(direct, grouped_logprobs(base_model, packed))


def test_entropy_metric_equals_the_per_row_path(base_model, batch) -> None:
    learner = Learner(tiny_model(base_model), config())
    rows = LearnerBatch(inputs=batch, advantages=torch.zeros(len(ROWS)), allowed=grammar(batch, learner.vocab_size))
    logp_g, entropy_g = logprobs_and_entropy(grouped_logprobs, learner.model, rows, grad=False)
    logp_r, entropy_r = logprobs_and_entropy(completion_logprobs, learner.model, rows, grad=False)
    assert entropy_g is not None and entropy_r is not None
    on = batch.completion_mask
    assert (logp_g - logp_r).abs().max() < 1e-5 and (entropy_g - entropy_r)[on].abs().max() < 1e-5


# --- the learner ---------------------------------------------------------------------------------


def learner_pair(base_model, **overrides) -> tuple[Learner, Learner]:
    """A learner on each path. Adam's first step moves an entry by ``lr * g / (|g| + eps)``: with
    the default eps (1e-8) an entry whose gradient is within float32 summation noise (~1e-8 here)
    of 0 may move by up to ``lr`` either way, on either path. eps = 1e-3 keeps the step a smooth
    function of the gradient, so equal gradients must give equal weights."""
    overrides = {"adam_eps": 1e-3, **overrides}
    grouped = Learner(tiny_model(base_model), config(**overrides))
    per_row = Learner(tiny_model(base_model), config(**overrides), logprob_fn=completion_logprobs)
    assert grouped.logprob_fn.func is grouped_logprobs and grouped._packs
    return grouped, per_row


def assert_same_state(a: Learner, b: Learner) -> None:
    sa, sb = a.trainable_state(), b.trainable_state()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.allclose(sa[k], sb[k], atol=1e-6, rtol=0), k


def advantages_batch(batch, allowed=None) -> LearnerBatch:
    return LearnerBatch(inputs=batch, advantages=torch.tensor([1.0, -0.5, 0.5, 1.0, -1.0, 1.0, 0.5]), allowed=allowed)


def test_an_update_gives_the_same_weights_as_the_per_row_path(base_model, batch) -> None:
    grouped, per_row = learner_pair(base_model, micro_batch_size=4)
    learning = advantages_batch(batch, grammar(batch, grouped.vocab_size))
    before = grouped.trainable_state()
    m_grouped, m_per_row = grouped.update(learning), per_row.update(learning)
    assert any(not torch.equal(v, before[k]) for k, v in grouped.trainable_state().items())
    assert_same_state(grouped, per_row)
    for key in ("train/loss", "train/grad_norm", "train/entropy", "train/tokens"):
        assert m_grouped[key] == pytest.approx(m_per_row[key], rel=1e-5), key
    assert torch.allclose(grouped.logprobs(batch), per_row.logprobs(batch), atol=1e-5, rtol=0)


def test_a_learner_at_the_sampling_temperature_gives_the_same_weights_as_the_per_row_path(base_model, batch) -> None:
    """The run's temperature reaches the learner as ``LearnerConfig.temperature``, bound to its log-prob function."""
    at_07 = config(adam_eps=1e-3, temperature=0.7)
    grouped = Learner(tiny_model(base_model), at_07)
    per_row = Learner(tiny_model(base_model), at_07, logprob_fn=completion_logprobs)
    plain = Learner(tiny_model(base_model), config(adam_eps=1e-3), logprob_fn=completion_logprobs)
    learning = advantages_batch(batch)
    m_grouped, m_per_row, m_plain = grouped.update(learning), per_row.update(learning), plain.update(learning)
    assert m_grouped["train/grad_norm"] == pytest.approx(m_per_row["train/grad_norm"], rel=1e-5)
    assert m_grouped["train/grad_norm"] != pytest.approx(m_plain["train/grad_norm"], rel=1e-3)  # T counts
    assert_same_state(grouped, per_row)


@pytest.mark.parametrize(
    "overrides",
    [{"kl_coef": 0.1}, {"full_weights": ("vision",), "full_weights_lr": 1e-3}, {"gradient_checkpointing": True}],
    ids=["kl", "full-weights", "checkpointing"],
)
def test_updates_give_the_same_weights_as_the_per_row_path(base_model, batch, overrides) -> None:
    """Two steps, so that the second has a trained adapter (and a KL term that is not 0)."""
    grouped, per_row = learner_pair(base_model, micro_batch_size=8, **overrides)
    learning = advantages_batch(batch)
    for _ in range(2):
        m_grouped, m_per_row = grouped.update(learning), per_row.update(learning)
        assert m_grouped["train/loss"] == pytest.approx(m_per_row["train/loss"], rel=1e-5)
    assert_same_state(grouped, per_row)
    if "kl_coef" in overrides:
        assert m_grouped["train/kl"] > 0 and m_grouped["train/kl"] == pytest.approx(m_per_row["train/kl"], rel=1e-4)
        assert torch.allclose(
            grouped.logprobs(batch, adapter=False), per_row.logprobs(batch, adapter=False), atol=1e-5, rtol=0
        )


def test_a_dpo_update_gives_the_same_weights_as_the_per_row_path(base_model, processor) -> None:
    """Pairs 0 and 1 are two preferences at one state, pair 2 at another; pair 1's rejected action
    is pair 0's chosen one (scored once on the grouped path)."""
    chosen = build_batch(processor, records([(GOAL, 1, [10, 11, 12]), (GOAL, 1, [13]), (OTHER_GOAL, 3, [14, 15])]))
    rejected = build_batch(processor, records([(GOAL, 1, [20, 21]), (GOAL, 1, [10, 11, 12]), (OTHER_GOAL, 3, [22])]))
    packed = pack(chosen, rejected, spatial_merge_size=2)
    assert packed.input_ids.shape[0] == 2
    grouped, per_row = learner_pair(base_model, micro_batch_size=2)
    w, r = LearnerBatch(chosen, torch.zeros(3)), LearnerBatch(rejected, torch.zeros(3))
    ref_w, ref_r = grouped.logprobs(w, adapter=False), grouped.logprobs(r, adapter=False)
    assert torch.allclose(ref_w, per_row.logprobs(w, adapter=False), atol=1e-5, rtol=0)
    m_grouped = dpo_update(grouped, w, r, ref_w, ref_r, beta=0.5, rpo_alpha=0.1)
    m_per_row = dpo_update(per_row, w, r, ref_w, ref_r, beta=0.5, rpo_alpha=0.1)
    assert m_grouped["dpo/grad_norm"] > 0
    assert m_grouped["dpo/grad_norm"] == pytest.approx(m_per_row["dpo/grad_norm"], rel=1e-5)
    assert_same_state(grouped, per_row)


def test_the_learner_moves_one_packed_micro_batch_at_a_time(base_model, batch, monkeypatch) -> None:
    # as the run manager builds it: at the sampling temperature
    learner = Learner(tiny_model(base_model), config(micro_batch_size=4, temperature=0.7))
    seen: list[PackedBatch] = []
    original = PackedBatch.to

    def spy(self, device):
        seen.append(self)
        return original(self, device)

    monkeypatch.setattr(PackedBatch, "to", spy)
    learner.update(advantages_batch(batch))
    # micro-batches [0-3] (one prompt) and [4, 5, 6] (two): each prompt's pixels once
    assert [len(p) for p in seen] == [4, 3]
    assert [p.input_ids.shape[0] for p in seen] == [1, 2]
    patches = int(batch.image_grid_thw[0].prod())
    assert [p.pixel_values.shape[0] for p in seen] == [patches, 2 * patches]


def test_an_attention_without_custom_masks_falls_back_to_the_per_row_path(base_model, batch, monkeypatch) -> None:
    """Flash attention reads only a padding mask: the packed sequences' mask would be ignored."""
    import halo_model.grouped as grouped

    packed = pack(batch, spatial_merge_size=2)
    monkeypatch.setattr(grouped, "CUSTOM_MASK_ATTENTION", ("eager",))  # as if sdpa took no custom mask
    assert torch.equal(grouped_logprobs(base_model, batch), completion_logprobs(base_model, batch))
    with pytest.raises(ValueError, match="custom mask"):
        grouped_logprobs(base_model, packed)
    learner = Learner(tiny_model(base_model), config())
    monkeypatch.setattr(PackedBatch, "to", lambda *_: pytest.fail("packed without a custom-mask attention"))
    assert learner.update(advantages_batch(batch))["train/grad_norm"] > 0
