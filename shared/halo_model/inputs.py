"""The learner's model inputs, rebuilt exactly as vLLM saw them: the prompt parity check.

``build_batch`` rebuilds each prompt with ``halo.prompts`` and the model's own processor (chat
template, image resize to the processor's ``max_pixels``), checks that its token ids are exactly
vLLM's ``prompt_token_ids`` (``PromptMismatch`` otherwise: a wrong log-prob is worse than none),
appends the completion tokens, right-pads, and returns the model inputs plus a completion mask
(``PolicyBatch``). ``select_rows`` takes rows out of a batch with their own images (micro-batches).

A batch holds each distinct screenshot's pixels once: the N candidates of a step group share their
screenshot, and a copy per row made an update's batch N times its pixels (at the 8B's 3,520 patches
a screenshot, ~21.6 MB of float32 each: ~10 GB for a GPU run's update) and the learner ranks'
broadcast pickled every copy. Each image a row's prompt shows (an image *slot*, the rows' slots in
row order) refers to its image by ``image_index``; the model is given a copy per slot only when it
is called (``model_inputs``), for one micro-batch at a time.

torch and transformers are imported lazily here so that ``halo_model`` stays importable without.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from halo.prompts import DEFAULT_HISTORY_LIMIT, build_messages
from halo.schemas.actions import Action
from halo.schemas.env import Viewport

if TYPE_CHECKING:
    import torch

IMAGE_TOKEN_TYPE = 1  # Qwen3-VL's mm_token_type_ids: 0 text, 1 image, 2 video


class PromptMismatch(AssertionError):
    """The rebuilt prompt's token ids differ from the ones vLLM sampled from."""


@dataclass(frozen=True)
class SampleRecord:
    """What the learner has for one sampled candidate (a ``Transition`` plus its screenshot(s))."""

    goal: str
    history: Sequence[str | Action]
    screenshots: Sequence[bytes]  # PNGs, oldest first, the current one last
    completion_token_ids: Sequence[int]
    prompt_token_ids: Sequence[int] | None = None  # vLLM's; checked when given


@dataclass
class PolicyBatch:
    """Right-padded model inputs for a batch of (prompt, completion) pairs."""

    input_ids: torch.Tensor  # [B, L]
    attention_mask: torch.Tensor  # [B, L]
    mm_token_type_ids: torch.Tensor  # [B, L] 1 on image tokens
    pixel_values: torch.Tensor  # [patches, C*T*P*P], each distinct image of the batch once
    image_grid_thw: torch.Tensor  # [images, 3] of those images
    image_index: torch.Tensor  # [slots] the image each row's image slot shows, the rows' slots in row order
    completion_ids: torch.Tensor  # [B, C] completion tokens, right-padded with 0
    completion_mask: torch.Tensor  # [B, C] True on real completion tokens
    completion_positions: torch.Tensor  # [B, C] index in input_ids of each completion token
    prompt_lengths: list[int]

    def to(self, device: Any) -> PolicyBatch:
        return PolicyBatch(**{f.name: _move(getattr(self, f.name), device) for f in fields(self)})

    def slot_grids(self) -> torch.Tensor:
        """``image_grid_thw`` per image slot: the grids the model's image tokens read, row after row."""
        return self.image_grid_thw[self.image_index]

    def slot_pixels(self) -> torch.Tensor:
        """The patches per image slot, as the model reads them: rows that show one image get a copy
        each (the vision tower runs once per slot). The batch's own tensor when no image repeats."""
        if self.image_index.tolist() == list(range(len(self.image_grid_thw))):
            return self.pixel_values
        return self.pixel_values[patch_index(self.image_grid_thw, self.image_index.tolist())]

    def model_inputs(self) -> dict[str, torch.Tensor]:
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "mm_token_type_ids": self.mm_token_type_ids,
            "pixel_values": self.slot_pixels(),
            "image_grid_thw": self.slot_grids(),
        }


def _move(value: Any, device: Any) -> Any:
    return value.to(device) if hasattr(value, "to") else value


def patch_index(grids: torch.Tensor, images: Sequence[int]) -> torch.Tensor:
    """The rows of ``pixel_values`` that hold ``images`` (indices into ``grids``), image after image."""
    import torch

    ends = grids.prod(-1).cumsum(0).tolist()
    starts = [0, *ends[:-1]]
    parts = [torch.arange(starts[i], ends[i]) for i in images]
    return (torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)).to(grids.device)


def unshared(batch: PolicyBatch) -> PolicyBatch:
    """``batch`` with a pixel copy per image slot: the layout in which each row carried its own
    images (what the model is given; the benches and tests compare the two)."""
    import torch

    slots = len(batch.image_index)
    return replace(
        batch,
        pixel_values=batch.slot_pixels().clone(),
        image_grid_thw=batch.slot_grids(),
        image_index=torch.arange(slots, device=batch.image_index.device),
    )


# --- inputs --------------------------------------------------------------------------------------
def _images(screenshots: Sequence[bytes]) -> list[Any]:
    from PIL import Image

    out = []
    for png in screenshots:
        with Image.open(io.BytesIO(png)) as im:
            out.append(im.convert("RGB"))  # what vLLM does with an RGBA/ P screenshot too
    return out


def prompt_inputs(
    processor: Any,
    goal: str,
    history: Sequence[str | Action],
    screenshots: Sequence[bytes],
    *,
    viewport: Viewport | None = None,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
    describe_tools: bool = True,
) -> dict[str, Any]:
    """Processor outputs (input_ids, pixel_values, image_grid_thw, ...) for one prompt, batch of 1."""
    if not screenshots:
        raise ValueError("at least the current screenshot is needed")
    messages = build_messages(
        goal,
        history,
        viewport=viewport,
        history_limit=history_limit,
        describe_tools=describe_tools,
        n_previous_images=len(screenshots) - 1,
    )
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return processor(text=[text], images=_images(screenshots), return_tensors="pt")


def build_batch(
    processor: Any,
    samples: Sequence[SampleRecord],
    *,
    viewport: Viewport | None = None,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
    describe_tools: bool = True,
) -> PolicyBatch:
    """Model inputs for a batch; raises ``PromptMismatch`` if a prompt is not the one vLLM saw."""
    import torch

    if not samples:
        raise ValueError("empty batch")
    rows, types, prompt_lengths = [], [], []
    pixels, grids, image_index = [], [], []
    images: dict[bytes, int] = {}  # a screenshot's digest -> its index among the batch's images
    encoded: dict[tuple, Any] = {}  # the N candidates of a step group share one prompt: encode it once
    for i, s in enumerate(samples):
        digests = tuple(hashlib.sha256(p).digest() for p in s.screenshots)
        key = (s.goal, tuple(str(h) for h in s.history), digests)
        if key not in encoded:
            encoded[key] = prompt_inputs(
                processor,
                s.goal,
                s.history,
                s.screenshots,
                viewport=viewport,
                history_limit=history_limit,
                describe_tools=describe_tools,
            )
        enc = encoded[key]
        ids = enc["input_ids"][0].tolist()
        if s.prompt_token_ids is not None and list(s.prompt_token_ids) != ids:
            first = next((k for k, (a, b) in enumerate(zip(ids, s.prompt_token_ids, strict=False)) if a != b), None)
            raise PromptMismatch(
                f"sample {i}: rebuilt prompt has {len(ids)} tokens, vLLM's has {len(s.prompt_token_ids)}; "
                f"first difference at {first if first is not None else min(len(ids), len(s.prompt_token_ids))} "
                "(same model dir, history_limit, viewport and processor kwargs on both sides?)"
            )
        completion = list(s.completion_token_ids)
        if not completion:
            raise ValueError(f"sample {i}: empty completion")
        rows.append(ids + completion)
        mm = enc.get("mm_token_type_ids")
        mm = mm[0].tolist() if mm is not None else [int(t == processor.image_token_id) for t in ids]
        types.append(mm + [0] * len(completion))
        # The processor resizes each image on its own, so a screenshot's patches are the same in every
        # prompt that shows it: the batch keeps the first copy and the other rows refer to it.
        sizes = enc["image_grid_thw"].prod(-1).tolist()
        for digest, grid, patches in zip(digests, enc["image_grid_thw"], enc["pixel_values"].split(sizes), strict=True):
            if digest not in images:
                images[digest] = len(pixels)
                pixels.append(patches)
                grids.append(grid)
            image_index.append(images[digest])
        prompt_lengths.append(len(ids))

    batch, length = len(rows), max(len(r) for r in rows)
    max_completion = max(len(r) - p for r, p in zip(rows, prompt_lengths, strict=True))
    pad_id = processor.tokenizer.pad_token_id or 0
    input_ids = torch.full((batch, length), pad_id, dtype=torch.long)
    attention = torch.zeros((batch, length), dtype=torch.long)
    mm_types = torch.zeros((batch, length), dtype=torch.int)
    completion_ids = torch.zeros((batch, max_completion), dtype=torch.long)
    completion_mask = torch.zeros((batch, max_completion), dtype=torch.bool)
    positions = torch.zeros((batch, max_completion), dtype=torch.long)
    for b, (row, mm, p) in enumerate(zip(rows, types, prompt_lengths, strict=True)):
        n = len(row)
        input_ids[b, :n] = torch.tensor(row)
        attention[b, :n] = 1
        mm_types[b, :n] = torch.tensor(mm, dtype=torch.int)
        c = n - p
        completion_ids[b, :c] = torch.tensor(row[p:])
        completion_mask[b, :c] = True
        positions[b, :c] = torch.arange(p, n)
    return PolicyBatch(
        input_ids=input_ids,
        attention_mask=attention,
        mm_token_type_ids=mm_types,
        pixel_values=torch.cat(pixels, dim=0),
        image_grid_thw=torch.stack(grids),
        image_index=torch.tensor(image_index, dtype=torch.long),
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        completion_positions=positions,
        prompt_lengths=prompt_lengths,
    )


def image_rows(batch: PolicyBatch, spatial_merge_size: int) -> list[int]:
    """The row each image slot of ``batch`` belongs to, from the image tokens each row holds."""
    per_row = (batch.mm_token_type_ids == IMAGE_TOKEN_TYPE).sum(-1).tolist()
    owner: list[int] = []
    row = 0
    for t, h, w in batch.slot_grids().tolist():
        tokens = t * h * w // spatial_merge_size**2
        while row < len(per_row) and per_row[row] == 0:
            row += 1
        if row == len(per_row) or per_row[row] < tokens:
            raise ValueError("image_grid_thw does not match the image tokens in the batch")
        owner.append(row)
        per_row[row] -= tokens
    if any(per_row):
        raise ValueError("the batch holds image tokens without an image in image_grid_thw")
    return owner


def row_images(batch: PolicyBatch, spatial_merge_size: int) -> list[list[int]]:
    """Per row, the images (indices into ``image_grid_thw``) its slots show, in order."""
    owner = image_rows(batch, spatial_merge_size)
    out: list[list[int]] = [[] for _ in batch.prompt_lengths]
    for row, image in zip(owner, batch.image_index.tolist(), strict=True):
        out[row].append(image)
    return out


def select_rows(batch: PolicyBatch, rows: Sequence[int], spatial_merge_size: int) -> PolicyBatch:
    """The given rows of a batch (in the order given) with the images they show, each once."""
    import torch

    index = torch.as_tensor(list(rows), dtype=torch.long, device=batch.input_ids.device)
    picked = {
        f.name: getattr(batch, f.name)[index]
        for f in fields(batch)
        if f.name not in ("pixel_values", "image_grid_thw", "image_index", "prompt_lengths")
    }
    picked["prompt_lengths"] = [batch.prompt_lengths[r] for r in rows]
    shown = row_images(batch, spatial_merge_size)
    slots = [image for r in rows for image in shown[r]]
    used = list(dict.fromkeys(slots))  # each image once, in order of first use
    renumber = {image: k for k, image in enumerate(used)}
    everything = used == list(range(len(batch.image_grid_thw)))
    return PolicyBatch(
        **picked,
        pixel_values=batch.pixel_values if everything else batch.pixel_values[patch_index(batch.image_grid_thw, used)],
        image_grid_thw=batch.image_grid_thw[used],
        image_index=torch.tensor([renumber[i] for i in slots], dtype=torch.long, device=batch.image_index.device),
    )
