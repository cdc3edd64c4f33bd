"""A batch holds each screenshot's pixels once (``halo_model.inputs``): on the tiny Qwen3-VL in float32
the per-row path, the grouped pass and the learner's micro-batches give the log-probs (and the
update) they gave when every row carried its own copy, and the ranks' broadcast pickles each
screenshot once."""

from __future__ import annotations

import pickle

import pytest
import torch

from halo_model.grouped import grouped_logprobs, pack
from halo_model.inputs import SampleRecord, build_batch, unshared
from halo_model.loading import load_processor
from halo_model.logprobs import completion_logprobs
from halo_trainer.learner.learner import Learner
from halo_trainer.learner.learner_batch import LearnerBatch
from tests.conftest import noise_png
from tests.trainer.learner.test_learner import GOAL, config, tiny_model

OTHER_GOAL = "Open the second tab and read it."
CLICK = "left_click(coordinate=[3, 4])"
A, B, C = (noise_png(64, 64, seed=s) for s in (11, 12, 13))
# Two step groups (screenshots A and B) and a row that shows A again, as its previous screenshot.
RECORDS = [
    *(SampleRecord(GOAL, [], [A], c) for c in ([10, 11, 12], [20, 21], [30, 31, 32, 33], [10, 11, 12])),
    *(SampleRecord(OTHER_GOAL, [], [B], c) for c in ([40, 41], [42], [43, 44, 45])),
    SampleRecord(GOAL, [CLICK], [A, C], [50, 51]),
]


@pytest.fixture(scope="module")
def processor(tiny_model_dir):
    return load_processor(tiny_model_dir)


@pytest.fixture(scope="module")
def batch(processor):
    return build_batch(processor, RECORDS)


def row_by_row(model, processor) -> torch.Tensor:
    """The reference: each row scored alone, as its own batch with its own copy of its images."""
    rows = [build_batch(processor, [r]) for r in RECORDS]
    out = torch.zeros((len(rows), max(r.completion_ids.shape[1] for r in rows)))
    for i, alone in enumerate(rows):
        out[i, : alone.completion_ids.shape[1]] = completion_logprobs(model, alone)[0]
    return out


def test_the_batch_holds_three_screenshots_for_nine_slots(batch) -> None:
    patches = int(batch.image_grid_thw[0].prod())
    assert batch.image_index.tolist() == [0, 0, 0, 0, 1, 1, 1, 0, 2]
    assert batch.pixel_values.shape[0] == 3 * patches
    assert unshared(batch).pixel_values.shape[0] == 9 * patches


def test_logprobs_equal_the_per_row_copies(base_model, batch) -> None:
    """The model is given the inputs it was given before: the same log-probs on either path."""
    old = unshared(batch)
    assert (completion_logprobs(base_model, batch) - completion_logprobs(base_model, old)).abs().max() <= 1e-6
    assert (grouped_logprobs(base_model, batch) - grouped_logprobs(base_model, old)).abs().max() <= 1e-6


@pytest.mark.slow
def test_logprobs_equal_each_row_scored_alone(base_model, processor, batch) -> None:
    """Each row alone has no padding: float32 rounding remains (1 ulp at |logp| ~ 12 is 9.5e-7)."""
    reference = row_by_row(base_model, processor)
    assert torch.allclose(completion_logprobs(base_model, batch), reference, atol=1e-6, rtol=1e-7)
    assert torch.allclose(grouped_logprobs(base_model, batch), reference, atol=1e-6, rtol=1e-7)


def test_packing_is_what_it_was_with_copies(batch) -> None:
    new, old = pack(batch, spatial_merge_size=2), pack(unshared(batch), spatial_merge_size=2)
    for name in ("input_ids", "pixel_values", "image_grid_thw", "sources", "row_group"):
        assert torch.equal(getattr(new, name), getattr(old, name)), name


def test_learner_micro_batches_gather_the_pixels_they_need(base_model, batch) -> None:
    """Micro-batches of 3 split the first group across two of them: each takes screenshot A."""
    learner = Learner(tiny_model(base_model), config(micro_batch_size=3))
    new = learner.logprobs(LearnerBatch(batch, torch.zeros(len(RECORDS))))
    old = learner.logprobs(LearnerBatch(unshared(batch), torch.zeros(len(RECORDS))))
    assert (new - old).abs().max() <= 1e-6


@pytest.mark.slow
def test_an_update_gives_the_same_weights_as_with_copies(base_model, batch) -> None:
    advantages = torch.tensor([1.0, -0.5, 0.5, -1.0, 0.3, -0.3, 0.2, 0.7])
    states = []
    for inputs in (batch, unshared(batch)):
        learner = Learner(tiny_model(base_model), config(micro_batch_size=3))
        learner.update(LearnerBatch(inputs, advantages))
        states.append(learner.trainable_state())
    assert states[0].keys() == states[1].keys()
    for name in states[0]:
        assert torch.equal(states[0][name], states[1][name]), name


def test_the_ranks_broadcast_pickles_each_screenshot_once(batch) -> None:
    """``ranks.Channel.tell`` broadcasts the batch object, pickled (``broadcast_object_list``)."""
    old = unshared(batch)
    once = len(pickle.dumps(LearnerBatch(batch, torch.zeros(len(RECORDS)))))
    copies = len(pickle.dumps(LearnerBatch(old, torch.zeros(len(RECORDS)))))
    assert old.pixel_values.nbytes == 3 * batch.pixel_values.nbytes  # 9 slots, 3 screenshots
    # what the copies add to the pickle is their pixels, to the byte but for the small tensors' headers
    assert abs((copies - once) - (old.pixel_values.nbytes - batch.pixel_values.nbytes)) < 1024
