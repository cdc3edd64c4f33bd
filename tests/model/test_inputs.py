"""Model inputs rebuilt as vLLM saw them: the batch layout, the prompt parity check, row selection."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from halo_model.inputs import PromptMismatch, SampleRecord, build_batch, prompt_inputs, select_rows, unshared
from halo_model.loading import load_processor
from tests.conftest import noise_png

GOAL = "Click the OK button."


@pytest.fixture(scope="module")
def processor(tiny_model_dir):
    return load_processor(tiny_model_dir)


def test_rows_are_prompt_then_completion_right_padded(processor) -> None:
    png = noise_png(64, 64, seed=1)
    batch = build_batch(processor, [SampleRecord(GOAL, [], [png], [4]), SampleRecord(GOAL, [], [png], [5, 6])])
    p = batch.prompt_lengths[0]
    prompt = prompt_inputs(processor, GOAL, [], [png])["input_ids"][0].tolist()
    assert batch.prompt_lengths == [p, p] and p == len(prompt)
    pad = processor.tokenizer.pad_token_id
    assert batch.input_ids.tolist() == [prompt + [4, pad], prompt + [5, 6]]
    assert batch.attention_mask.sum(-1).tolist() == [p + 1, p + 2]
    assert batch.completion_ids.tolist() == [[4, 0], [5, 6]]
    assert batch.completion_mask.tolist() == [[True, False], [True, True]]
    assert batch.completion_positions.tolist() == [[p, 0], [p, p + 1]]
    image_tokens = batch.input_ids == processor.image_token_id
    assert torch.equal(batch.mm_token_type_ids.bool(), image_tokens) and int(image_tokens[0].sum()) > 0
    # the two rows show one screenshot: the batch holds it once, both rows' slots refer to it
    assert batch.image_grid_thw.shape[0] == 1 and batch.pixel_values.shape[0] == int(batch.image_grid_thw[0].prod())
    assert batch.image_index.tolist() == [0, 0]


def test_a_prompt_other_than_vllms_is_refused_with_the_first_difference(processor) -> None:
    png = noise_png(64, 64, seed=1)
    ids = prompt_inputs(processor, GOAL, [], [png])["input_ids"][0].tolist()
    build_batch(processor, [SampleRecord(GOAL, [], [png], [4], prompt_token_ids=ids)])  # the same: accepted
    changed = ids[:10] + [ids[10] + 1] + ids[11:]
    with pytest.raises(PromptMismatch, match="first difference at 10"):
        build_batch(processor, [SampleRecord(GOAL, [], [png], [4], prompt_token_ids=changed)])
    with pytest.raises(PromptMismatch, match="first difference"):
        build_batch(processor, [SampleRecord(GOAL, ["type(text='x')"], [png], [4], prompt_token_ids=ids)])


def test_empty_inputs_are_clear_errors(processor) -> None:
    png = noise_png(64, 64, seed=1)
    with pytest.raises(ValueError, match="empty batch"):
        build_batch(processor, [])
    with pytest.raises(ValueError, match="sample 1: empty completion"):
        build_batch(processor, [SampleRecord(GOAL, [], [png], [4]), SampleRecord(GOAL, [], [png], [])])
    with pytest.raises(ValueError, match="screenshot"):
        build_batch(processor, [SampleRecord(GOAL, [], [], [4])])


def test_select_rows_keeps_each_rows_own_images_and_rejects_mismatches(processor) -> None:
    shots = [noise_png(64, 64, seed=2), noise_png(96, 64, seed=3), noise_png(64, 128, seed=4)]
    batch = build_batch(processor, [SampleRecord(GOAL, [], [png], [7]) for png in shots])
    patches = batch.image_grid_thw.prod(-1).tolist()
    assert len(set(patches)) == 3  # three image sizes
    last = select_rows(batch, [2], spatial_merge_size=2)
    assert torch.equal(last.image_grid_thw, batch.image_grid_thw[2:])
    assert torch.equal(last.pixel_values, batch.pixel_values[patches[0] + patches[1] :])
    outer = select_rows(batch, [0, 2], spatial_merge_size=2)
    assert outer.prompt_lengths == [batch.prompt_lengths[0], batch.prompt_lengths[2]]
    assert outer.pixel_values.shape[0] == patches[0] + patches[2]
    assert torch.equal(outer.input_ids, batch.input_ids[[0, 2]])
    with pytest.raises(ValueError, match="without an image"):
        select_rows(replace(batch, image_index=batch.image_index[:2]), [0], spatial_merge_size=2)
    with pytest.raises(ValueError, match="does not match"):
        select_rows(replace(batch, image_grid_thw=batch.image_grid_thw * 2), [0], spatial_merge_size=2)


def test_each_screenshot_is_held_once_and_the_model_gets_a_copy_per_slot(processor) -> None:
    a, b, c = (noise_png(64, 64, seed=s) for s in (5, 6, 7))
    records = [
        SampleRecord(GOAL, [], [a], [7]),
        SampleRecord(GOAL, ["left_click(coordinate=[3, 4])"], [a, b], [8]),  # a, as the previous screenshot
        SampleRecord(GOAL, [], [c], [9]),
        SampleRecord(GOAL, [], [a], [10, 11]),
    ]
    batch = build_batch(processor, records)
    patches = int(batch.image_grid_thw[0].prod())
    assert batch.image_index.tolist() == [0, 0, 1, 2, 0]  # slots: a | a, b | c | a
    assert batch.pixel_values.shape[0] == 3 * patches
    # what the model reads is what each row's own copy of its images was
    alone = [build_batch(processor, [r]) for r in records]
    assert torch.equal(batch.slot_pixels(), torch.cat([x.pixel_values for x in alone]))
    assert torch.equal(batch.slot_grids(), torch.cat([x.image_grid_thw for x in alone]))
    old = unshared(batch)
    assert old.pixel_values.shape[0] == 5 * patches and old.image_index.tolist() == list(range(5))
    assert torch.equal(old.model_inputs()["pixel_values"], batch.model_inputs()["pixel_values"])
    # rows in any order, with the images they show, each once
    picked = select_rows(batch, [3, 1], spatial_merge_size=2)
    assert picked.image_index.tolist() == [0, 0, 1]
    assert torch.equal(picked.slot_pixels(), torch.cat([alone[3].pixel_values, alone[1].pixel_values]))
    assert picked.pixel_values.shape[0] == 2 * patches
    assert torch.equal(select_rows(batch, [2], spatial_merge_size=2).pixel_values, alone[2].pixel_values)
