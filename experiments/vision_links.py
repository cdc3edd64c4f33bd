"""Links 1 and 2 of the vision diagnostic (``vision_diagnostic.py``): what the model's input
and its vision tower carry of the layout, on the learner's model as it is now.

``input_and_tower`` returns the diagnostic's ``input`` line (the image grid, the pixel differences
between layouts, the merged tokens each layout's button covers, a label-free read-out of the
quadrant from the pixels) and its ``tower`` line (the same differences and read-out on the merged
and DeepStack features, on the language model's last hidden state at the image tokens and at the
answer's first decision, and the attention that decision puts on the image and button tokens).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # click_layouts: the fixed completion

from click_layouts import VIEWPORT, fixed_completion

from halo_model.inputs import IMAGE_TOKEN_TYPE, SampleRecord, build_batch
from halo_model.logprobs import base_model
from halo_trainer.learner.learner import Learner


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """|a - b| / |a| (Frobenius), nan when a is empty."""
    if a.numel() == 0:
        return float("nan")
    return float((a - b).norm() / a.norm().clamp(min=1e-12))


def token_grid(grid_thw: list[int], merge: int) -> tuple[int, int]:
    """(rows, cols) of the merged image tokens of one image."""
    _, h, w = grid_thw
    return h // merge, w // merge


def quadrant_of_token(index: int, rows: int, cols: int, slots: list) -> int:
    """The slot nearest to a merged token's centre (the processor keeps the screenshot's aspect)."""
    r, c = divmod(index, cols)
    x, y = (c + 0.5) / cols * VIEWPORT.width, (r + 0.5) / rows * VIEWPORT.height
    return min(range(len(slots)), key=lambda k: (slots[k][0] - x) ** 2 + (slots[k][1] - y) ** 2)


def differing_tokens(per_layout: list[torch.Tensor], merge: int) -> tuple[list[list[bool]], list[list[int]]]:
    """Pairwise: which merged tokens' patches differ; per layout: the tokens differing from every other
    layout (its own button). ``per_layout[i]``: [patches, D], merge x merge consecutive patches a token."""
    n = len(per_layout)
    grouped = [p.reshape(-1, merge * merge, p.shape[-1]) for p in per_layout]  # [tokens, m*m, D]
    differ = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            differ[i][j] = (grouped[i] - grouped[j]).abs().amax(dim=(1, 2)) > 1e-6  # [tokens]
    own = []
    for i in range(n):
        mask = torch.stack([differ[i][j] for j in range(n) if j != i]).all(0)
        own.append(mask.nonzero().flatten().tolist())
    return differ, own


def readout(features: list[torch.Tensor], rows: int, cols: int, slots: list) -> dict:
    """Label-free quadrant read-out: per layout, the token farthest from the other layouts' mean there,
    mapped to the nearest slot; plus its distance over the median token's (the contrast)."""
    stacked = torch.stack(features)  # [layouts, tokens, H]
    guesses, contrast = [], []
    for i in range(len(features)):
        others = torch.cat([stacked[:i], stacked[i + 1 :]]).mean(0)
        dev = (stacked[i] - others).norm(dim=-1)
        guesses.append(quadrant_of_token(int(dev.argmax()), rows, cols, slots))
        median = float(dev.median())
        contrast.append(float(dev.max()) / median if median > 0 else None)  # None: the rest is identical
    return {
        "quadrant_guess": guesses,
        "correct": sum(g == i for i, g in enumerate(guesses)),
        "max_over_median_deviation": [None if c is None else round(c, 2) for c in contrast],
    }


def pair_differences(features: list[torch.Tensor], differ) -> dict:
    """Mean over layout pairs of the relative difference at the tokens whose pixels differ / the rest."""
    n = len(features)
    at, rest = [], []
    for i in range(n):
        for j in range(i + 1, n):
            mask = differ[i][j]
            at.append(rel(features[i][mask], features[j][mask]))
            rest.append(rel(features[i][~mask], features[j][~mask]))
    return {
        "rel_diff_differing_tokens": round(sum(at) / len(at), 5),
        "rel_diff_other_tokens": round(sum(rest) / len(rest), 5),
    }


def prompts(processor, shots: list[bytes], goal: str, completions: list[list[int]], describe_tools: bool = True):
    records = [SampleRecord(goal, [], [png], c) for png, c in zip(shots, completions, strict=True)]
    return build_batch(processor, records, describe_tools=describe_tools)


@torch.no_grad()
def input_and_tower(
    learner: Learner, processor, shots: list[bytes], goal: str, config: dict, describe_tools: bool = True
) -> list[dict]:
    """Links 1 and 2 (see the module docstring) on the learner's model as it is now."""
    slots = config["slots"]
    merge = learner.merge_size
    batch = prompts(processor, shots, goal, [fixed_completion(processor)] * len(shots), describe_tools)
    grids = batch.slot_grids().tolist()  # one per shot, a repeated shot too
    sizes = [t * h * w for t, h, w in grids]
    pixels = list(torch.split(batch.slot_pixels(), sizes))
    rows, cols = token_grid(grids[0], merge)
    differ, own = differing_tokens(pixels, merge)
    n = len(shots)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    input_line = {
        "kind": "input",
        "image_grid_thw": grids[0],
        "image_tokens": int((batch.mm_token_type_ids[0] == IMAGE_TOKEN_TYPE).sum()),
        "token_grid": [rows, cols],
        "prompt_tokens": batch.prompt_lengths[0],
        "pixel_rel_l2": {f"{i}-{j}": round(rel(pixels[i], pixels[j]), 4) for i, j in pairs},
        "differing_tokens_per_pair": {f"{i}-{j}": int(differ[i][j].sum()) for i, j in pairs},
        "button_tokens": [len(o) for o in own],
        "button_token_quadrants": [sorted({quadrant_of_token(t, rows, cols, slots) for t in o}) for o in own],
        "pixel_readout": readout([p.reshape(rows * cols, -1) for p in pixels], rows, cols, slots),
    }

    core = base_model(learner.model)
    out = core.model.get_image_features(batch.slot_pixels(), batch.slot_grids(), return_dict=True)
    merged = list(out.pooler_output)
    tower = {
        "kind": "tower",
        "merged": {**pair_differences(merged, differ), "readout": readout(merged, rows, cols, slots)},
    }
    for k, feats in enumerate(out.deepstack_features):
        feats = list(feats)
        tower[f"deepstack_{k}"] = {**pair_differences(feats, differ), "readout": readout(feats, rows, cols, slots)}
    hidden = core.model(**batch.model_inputs(), use_cache=False).last_hidden_state  # [B, L, H]
    image_pos = batch.mm_token_type_ids == IMAGE_TOKEN_TYPE
    at_image = [hidden[b][image_pos[b]] for b in range(n)]
    tower["lm_last_hidden_at_image_tokens"] = {
        **pair_differences(at_image, differ),
        "readout": readout(at_image, rows, cols, slots),
    }
    # The hidden state that predicts the first completion token (identical prompts but the pixels).
    last = [hidden[b, batch.prompt_lengths[b] - 1] for b in range(n)]
    tower["lm_last_hidden_at_answer_rel_diff"] = round(sum(rel(last[i], last[j]) for i, j in pairs) / len(pairs), 6)
    tower["answer_attention"] = answer_attention(core, batch, own)
    return [input_line, tower]


@torch.no_grad()
def answer_attention(core, batch, own: list[list[int]]) -> dict:
    """Per language-model layer, the attention mass (mean over heads and layouts) that the position
    predicting the answer's first token puts on the image tokens and on the layout's own button
    tokens, beside the share each set would get from uniform attention."""
    previous = core.config._attn_implementation
    core.set_attn_implementation("eager")  # sdpa returns no attention weights
    try:
        attentions = core.model(**batch.model_inputs(), use_cache=False, output_attentions=True).attentions
    finally:
        core.set_attn_implementation(previous)
    image = batch.mm_token_type_ids == IMAGE_TOKEN_TYPE
    button = torch.zeros_like(image)
    for b, tokens in enumerate(own):
        positions = image[b].nonzero().flatten()
        button[b, positions[tokens]] = True
    last = torch.tensor(batch.prompt_lengths) - 1
    rows = [a[torch.arange(len(last)), :, last, :] for a in attentions]  # per layer [B, heads, L]
    return {
        "image_mass": [round(float((r * image[:, None]).sum(-1).mean()), 4) for r in rows],
        "button_mass": [round(float((r * button[:, None]).sum(-1).mean()), 5) for r in rows],
        "uniform_image_share": round(float(image[0].sum()) / int(batch.prompt_lengths[0]), 4),
        "uniform_button_share": round(sum(len(o) for o in own) / len(own) / int(batch.prompt_lengths[0]), 5),
    }
