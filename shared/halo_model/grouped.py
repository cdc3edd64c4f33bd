"""One prompt pass per group: log-probs of completions that share a prompt, from one forward of it.

In step-group mode the N completions of a group share their prompt (screenshot, goal, history:
~893 of ~920 tokens on the tiny model, ~1,700 of ~1,775 on the 8B), and the per-row path
(``logprobs.completion_logprobs``) runs the vision tower and every decoder layer over each row's
own copy of it. Here the rows that share a prompt (same prompt token ids, same pixels and
``image_grid_thw``) become one *packed* sequence: the prompt once, then each distinct completion
after it, with

* an attention mask in which a completion token sees the prompt and its own earlier tokens, never
  another completion (transformers' ``create_causal_mask`` with one more mask function, so the mask
  has the form the model's attention implementation reads);
* Qwen3-VL's 3D mrope position ids: the prompt's from the model's own ``get_rope_index``, each
  completion's continuing after the prompt (its ``rope_delta`` included), i.e. the positions the
  completion has in its own row.

So every completion token gets the hidden state it gets per row, and the backward sums the
completions' gradients through the one prompt pass (the LoRA of the prompt's layers, the vision
tower when it trains in full), as the per-row backward does over the copies.

A packed sequence rather than a KV cache (prompt once with ``use_cache=True``, the cache expanded
to N rows): transformers drops ``past_key_values`` in every layer under gradient checkpointing
(``GradientCheckpointingLayer``), which the 8B on one GPU trains with. A packed sequence is one
ordinary forward, so checkpointing, the deepstack visual embeddings and the vision tower work as
they do per row, and no N copies of the prompt's keys and values are held.

Identical completions of one prompt (a grammar-constrained policy often repeats an action) are
computed once and read by each of their rows. Rows whose prompt is unique are packed sequences of
one completion: the per-row layout. Attention implementations that take no custom mask (flash
attention reads only a padding mask) use the per-row path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from halo_model.inputs import PolicyBatch, row_images
from halo_model.logprobs import base_model, completion_logprobs, token_logprobs

if TYPE_CHECKING:
    import torch

# Attention implementations whose mask interface builds an arbitrary mask function (see the docstring).
CUSTOM_MASK_ATTENTION = ("sdpa", "eager")


@dataclass
class PackedBatch:
    """The rows of one or more ``PolicyBatch`` es, packed as one sequence per distinct prompt.

    Packed rows (``G``, one per prompt) hold the prompt, then its distinct completions, then right
    padding; ``segments`` says which part each token is (0 prompt, k >= 1 the k-th completion, -1
    padding) and ``row_positions`` the index it would have in its own row. Batch rows (``B``) read
    their completion's hidden states from packed row ``row_group[b]`` at ``sources[b]``.
    """

    input_ids: torch.Tensor  # [G, L]
    attention_mask: torch.Tensor  # [G, L] 1 on real tokens
    mm_token_type_ids: torch.Tensor  # [G, L]
    pixel_values: torch.Tensor  # one copy of each prompt's images
    image_grid_thw: torch.Tensor
    segments: torch.Tensor  # [G, L]
    row_positions: torch.Tensor  # [G, L]
    row_group: torch.Tensor  # [B]
    sources: torch.Tensor  # [B, C] the hidden state that predicts each completion token
    completion_ids: torch.Tensor  # [B, C]
    completion_mask: torch.Tensor  # [B, C]

    def to(self, device: Any) -> PackedBatch:
        return PackedBatch(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})

    def __len__(self) -> int:
        return self.completion_ids.shape[0]


@dataclass
class _Row:
    prompt: list[int]
    types: list[int]
    completion: list[int]
    pixels: torch.Tensor  # this row's images' patches
    grids: torch.Tensor  # [images, 3]
    images: tuple[int, ...]  # (its batch's place among those packed, then the images it shows there)


def _rows(batch: PolicyBatch, spatial_merge_size: int, place: int = 0) -> list[_Row]:
    """Each row's prompt, completion and images (views of the batch's images, nothing copied for
    a row that shows one)."""
    import torch

    shown = row_images(batch, spatial_merge_size)
    ends = batch.image_grid_thw.prod(-1).cumsum(0).tolist()
    starts = [0, *ends[:-1]]
    ids, types = batch.input_ids.tolist(), batch.mm_token_type_ids.tolist()
    lengths = batch.completion_mask.sum(-1).tolist()
    completions = batch.completion_ids.tolist()
    rows = []
    for r, p in enumerate(batch.prompt_lengths):
        images = shown[r]
        pixels = [batch.pixel_values[starts[i] : ends[i]] for i in images]
        rows.append(
            _Row(
                prompt=ids[r][:p],
                types=types[r][:p],
                completion=completions[r][: lengths[r]],
                pixels=pixels[0] if len(pixels) == 1 else torch.cat([batch.pixel_values[:0], *pixels]),
                grids=batch.image_grid_thw[images],
                images=(place, *images),
            )
        )
    return rows


def prompt_groups(batch: PolicyBatch, spatial_merge_size: int) -> list[list[int]]:
    """The rows of ``batch`` that share a prompt (token ids and pixels), groups in order of first row."""
    return _groups(_rows(batch, spatial_merge_size))


def _groups(rows: Sequence[_Row]) -> list[list[int]]:
    groups: list[list[int]] = []
    by_key: dict[tuple, list[int]] = {}
    for r, row in enumerate(rows):
        key = (tuple(row.prompt), tuple(map(tuple, row.grids.tolist())))
        candidates = by_key.setdefault(key, [])
        # Rows of one batch that show the same images hold them once (``build_batch``); rows of two
        # batches (DPO's chosen and rejected sides) are compared by their pixels.
        same = next((g for g in candidates if _same_images(rows[groups[g][0]], row)), None)
        if same is None:
            candidates.append(len(groups))
            groups.append([r])
        else:
            groups[same].append(r)
    return groups


def _same_images(a: _Row, b: _Row) -> bool:
    import torch

    return a.images == b.images or torch.equal(a.pixels, b.pixels)


def pack(*batches: PolicyBatch, spatial_merge_size: int) -> PackedBatch:
    """The rows of ``batches`` (in order) packed by prompt; run it on the CPU, then ``.to(device)``:
    each prompt's pixels travel once."""
    import torch

    rows = [row for place, batch in enumerate(batches) for row in _rows(batch, spatial_merge_size, place)]
    groups = _groups(rows)
    width = max(b.completion_ids.shape[1] for b in batches)  # the per-row path's [B, C]
    sequences = [_sequence(rows, members, width) for members in groups]
    row_group, sources = [0] * len(rows), [[0] * width for _ in rows]
    for g, (members, sequence) in enumerate(zip(groups, sequences, strict=True)):
        for r in members:
            row_group[r], sources[r] = g, sequence.sources[r]
    length = max(len(s.ids) for s in sequences)
    completion_ids = torch.zeros((len(rows), width), dtype=torch.long)
    completion_mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for r, row in enumerate(rows):
        completion_ids[r, : len(row.completion)] = torch.tensor(row.completion, dtype=torch.long)
        completion_mask[r, : len(row.completion)] = True
    return PackedBatch(
        input_ids=_padded([s.ids for s in sequences], length, 0, torch.long),  # padding: never attended to
        attention_mask=_padded([[1] * len(s.ids) for s in sequences], length, 0, torch.long),
        mm_token_type_ids=_padded([s.types for s in sequences], length, 0, torch.int),
        pixel_values=torch.cat([rows[m[0]].pixels for m in groups]),
        image_grid_thw=torch.cat([rows[m[0]].grids for m in groups]),
        segments=_padded([s.segments for s in sequences], length, -1, torch.long),
        row_positions=_padded([s.positions for s in sequences], length, 0, torch.long),
        row_group=torch.tensor(row_group, dtype=torch.long),
        sources=torch.tensor(sources, dtype=torch.long),
        completion_ids=completion_ids,
        completion_mask=completion_mask,
    )


@dataclass
class _Sequence:
    ids: list[int]
    types: list[int]
    segments: list[int]
    positions: list[int]
    sources: dict[int, list[int]]  # row -> the index of the hidden state that predicts each token


def _sequence(rows: Sequence[_Row], members: Sequence[int], width: int) -> _Sequence:
    """One packed sequence: the prompt of ``members``, then each distinct completion of theirs."""
    prompt = rows[members[0]]
    p = len(prompt.prompt)
    out = _Sequence(list(prompt.prompt), list(prompt.types), [0] * p, list(range(p)), {})
    starts: dict[tuple[int, ...], int] = {}
    for r in members:
        completion = rows[r].completion
        if tuple(completion) not in starts:
            starts[tuple(completion)] = len(out.ids)
            out.ids += completion
            out.types += [0] * len(completion)
            out.segments += [len(starts)] * len(completion)
            out.positions += range(p, p + len(completion))
        start = starts[tuple(completion)]
        # Completion token j is predicted by token j - 1's hidden state: the prompt's last for j = 0.
        predicted_by = [p - 1] + [start + j for j in range(len(completion) - 1)]
        out.sources[r] = (predicted_by + [p - 1] * width)[:width]
    return out


def _padded(values: list[list[int]], length: int, fill: int, dtype: torch.dtype) -> torch.Tensor:
    import torch

    out = torch.full((len(values), length), fill, dtype=dtype)
    for i, v in enumerate(values):
        out[i, : len(v)] = torch.tensor(v, dtype=dtype)
    return out


def packed_hidden(core: Any, packed: PackedBatch) -> torch.Tensor:
    """The language model's last hidden states ``[G, L, H]`` over the packed sequences."""
    import torch
    from transformers.masking_utils import create_causal_mask

    model = core.model
    prompt = packed.segments == 0
    rope, deltas = model.get_rope_index(
        packed.input_ids, packed.mm_token_type_ids, image_grid_thw=packed.image_grid_thw, attention_mask=prompt
    )
    # A completion continues its prompt as it does in its own row: text positions after the prompt's last.
    position_ids = torch.where(prompt, rope, packed.row_positions + deltas)  # [3, G, L]
    segments = packed.segments

    def prompt_or_own_completion(batch_idx: Any, head_idx: Any, q_idx: Any, kv_idx: Any) -> Any:
        kv = segments[batch_idx, kv_idx]
        return (kv == 0) | (kv == segments[batch_idx, q_idx])

    text = model.language_model
    # create_causal_mask reads only the batch size, length, dtype and device of inputs_embeds.
    shape_of = torch.empty((*packed.input_ids.shape, 0), dtype=text.embed_tokens.weight.dtype, device=segments.device)
    mask = create_causal_mask(
        config=text.config,
        inputs_embeds=shape_of,
        attention_mask=packed.attention_mask,
        past_key_values=None,
        and_mask_function=prompt_or_own_completion,
    )
    images = len(packed.image_grid_thw) > 0
    return model(
        input_ids=packed.input_ids,
        attention_mask=mask,
        position_ids=position_ids,
        mm_token_type_ids=packed.mm_token_type_ids,
        pixel_values=packed.pixel_values if images else None,
        image_grid_thw=packed.image_grid_thw if images else None,
        use_cache=False,
    ).last_hidden_state


def supports_packing(model: Any) -> bool:
    """Does the model's attention implementation take the packed sequences' mask?"""
    return base_model(model).model.language_model.config._attn_implementation in CUSTOM_MASK_ATTENTION


def grouped_logprobs(
    model: Any,
    batch: PolicyBatch | PackedBatch,
    *,
    temperature: float = 1.0,
    grad: bool = False,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """``completion_logprobs`` with one prompt pass per distinct prompt: the same ``[B, C]`` log-probs
    (``B`` the batch's rows; a ``PackedBatch`` is the rows of the batches it packs, in order)."""
    import torch

    core = base_model(model)
    if not supports_packing(core):
        if isinstance(batch, PackedBatch):
            raise ValueError("this attention implementation takes no custom mask: pass the PolicyBatch")
        return completion_logprobs(model, batch, temperature=temperature, grad=grad, allowed=allowed)
    if isinstance(batch, PolicyBatch):
        batch = pack(batch, spatial_merge_size=core.config.vision_config.spatial_merge_size)
    context = torch.enable_grad() if grad else torch.no_grad()
    with context:
        hidden = packed_hidden(core, batch)
        picked = hidden[batch.row_group.unsqueeze(-1), batch.sources]  # [B, C, H]
        return token_logprobs(
            core, picked, batch.completion_ids, batch.completion_mask, temperature=temperature, allowed=allowed
        )
