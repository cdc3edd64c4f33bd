"""The learner's model inputs, rebuilt exactly as vLLM saw them: the prompt parity check.

``build_batch`` rebuilds each prompt with ``halo.prompts`` and the model's own processor (chat
template, image resize to the processor's ``max_pixels``), checks that its token ids are exactly
vLLM's ``prompt_token_ids`` (``PromptMismatch`` otherwise: a wrong log-prob is worse than none),
appends the completion tokens, right-pads, and returns the model inputs plus a completion mask
(``PolicyBatch``). ``select_rows`` takes rows out of a batch with their own images (micro-batches).

torch and transformers are imported lazily here so that ``halo_model`` stays importable without.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, fields
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
    pixel_values: torch.Tensor  # [patches, C*T*P*P], all images of the batch in order
    image_grid_thw: torch.Tensor  # [images, 3]
    completion_ids: torch.Tensor  # [B, C] completion tokens, right-padded with 0
    completion_mask: torch.Tensor  # [B, C] True on real completion tokens
    completion_positions: torch.Tensor  # [B, C] index in input_ids of each completion token
    prompt_lengths: list[int]

    def to(self, device: Any) -> PolicyBatch:
        return PolicyBatch(**{f.name: _move(getattr(self, f.name), device) for f in fields(self)})

    def model_inputs(self) -> dict[str, torch.Tensor]:
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "mm_token_type_ids": self.mm_token_type_ids,
            "pixel_values": self.pixel_values,
            "image_grid_thw": self.image_grid_thw,
        }


def _move(value: Any, device: Any) -> Any:
    return value.to(device) if hasattr(value, "to") else value


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
    rows, types, pixels, grids, prompt_lengths = [], [], [], [], []
    encoded: dict[tuple, Any] = {}  # the N candidates of a step group share one prompt: encode it once
    for i, s in enumerate(samples):
        key = (s.goal, tuple(str(h) for h in s.history), tuple(hashlib.sha256(p).digest() for p in s.screenshots))
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
        pixels.append(enc["pixel_values"])
        grids.append(enc["image_grid_thw"])
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
        image_grid_thw=torch.cat(grids, dim=0),
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        completion_positions=positions,
        prompt_lengths=prompt_lengths,
    )


def image_rows(batch: PolicyBatch, spatial_merge_size: int) -> list[int]:
    """The row each image of ``batch`` belongs to, from the image tokens each row holds."""
    per_row = (batch.mm_token_type_ids == IMAGE_TOKEN_TYPE).sum(-1).tolist()
    owner: list[int] = []
    row = 0
    for t, h, w in batch.image_grid_thw.tolist():
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


def select_rows(batch: PolicyBatch, rows: Sequence[int], spatial_merge_size: int) -> PolicyBatch:
    """The given rows of a batch, with their own images' patches (every prompt holds a screenshot)."""
    import torch

    index = torch.as_tensor(list(rows), dtype=torch.long, device=batch.input_ids.device)
    picked = {
        f.name: getattr(batch, f.name)[index]
        for f in fields(batch)
        if f.name not in ("pixel_values", "image_grid_thw", "prompt_lengths")
    }
    picked["prompt_lengths"] = [batch.prompt_lengths[r] for r in rows]
    owner = image_rows(batch, spatial_merge_size)
    starts = [0]
    for n in batch.image_grid_thw.prod(-1).tolist():
        starts.append(starts[-1] + n)
    wanted = set(rows)
    keep = [i for i, row in enumerate(owner) if row in wanted]
    patches = torch.cat([torch.arange(starts[i], starts[i + 1]) for i in keep]).to(batch.pixel_values.device)
    return PolicyBatch(**picked, pixel_values=batch.pixel_values[patches], image_grid_thw=batch.image_grid_thw[keep])
