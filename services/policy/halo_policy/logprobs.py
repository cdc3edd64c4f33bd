"""Recompute, with transformers (+ peft), the log-probs vLLM reported for sampled completions.

The learner needs log pi(a|s) of the tokens vLLM sampled, under the weights it trains, with
gradients. Two steps, both batched over a group:

1. ``build_batch``: rebuild each prompt with ``halo.prompts`` and the model's own processor (chat
   template, image resize to the processor's ``max_pixels``), check that its token ids are exactly
   vLLM's ``prompt_token_ids`` (``PromptMismatch`` otherwise: a wrong log-prob is worse than none),
   append the completion tokens, right-pad, and return the model inputs plus a completion mask.
2. ``completion_logprobs``: one forward pass; the hidden state before each completion token goes
   through ``lm_head``; ``log_softmax`` at ``temperature`` (1.0 = vLLM's default ``raw_logprobs``);
   gather. Logits are only computed at completion positions (the 8B's vocab is 151k).

Structured outputs: vLLM applies the grammar's token mask to the logits *before* it computes the
log-probs it returns, so a constrained token's behaviour log-prob is renormalised over the allowed
tokens. ``grammar_masks`` replays the same grammar with xgrammar (vLLM's backend) over each
completion and gives the allowed-token mask per position, which ``completion_logprobs`` applies
when passed ``allowed=``. Without structured outputs (the 8B default) no mask is needed.

torch, transformers and peft are imported lazily here so that ``halo`` stays importable without.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from halo.prompts import DEFAULT_HISTORY_LIMIT, build_messages
from halo.schemas.actions import Action
from halo.schemas.env import Viewport

if TYPE_CHECKING:
    import torch


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


# --- loading -------------------------------------------------------------------------------------
def load_processor(model_path: str | Path, **processor_kwargs: Any) -> Any:
    """The model's processor (tokenizer, chat template, image processor), exactly as vLLM loads it.

    ``processor_kwargs`` must equal the server's ``--mm-processor-kwargs`` when it sets any.
    """
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(model_path), **processor_kwargs)


def load_policy_model(
    model_path: str | Path,
    adapter_path: str | Path | None = None,
    *,
    dtype: str = "float32",
    device: str = "cpu",
    trainable: bool = False,
) -> Any:
    """Qwen3-VL (optionally with a PEFT LoRA adapter) in ``dtype``, in eval mode.

    Use the dtype the server uses: float32 on the CPU target (``PolicySettings.resolved_dtype``).
    ``trainable=True`` leaves the adapter's LoRA weights trainable (the learner's case).
    """
    import torch
    from transformers import Qwen3VLForConditionalGeneration

    torch_dtype = getattr(torch, dtype)
    model = Qwen3VLForConditionalGeneration.from_pretrained(str(model_path), dtype=torch_dtype).to(device)
    if adapter_path is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter_path), is_trainable=trainable).to(device)
    return model.eval()


def _unwrap(model: Any) -> Any:
    """The ``Qwen3VLForConditionalGeneration`` (LoRA layers stay injected in a PEFT model)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


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
) -> dict[str, Any]:
    """Processor outputs (input_ids, pixel_values, image_grid_thw, ...) for one prompt, batch of 1."""
    if not screenshots:
        raise ValueError("at least the current screenshot is needed")
    messages = build_messages(
        goal, history, viewport=viewport, history_limit=history_limit, n_previous_images=len(screenshots) - 1
    )
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return processor(text=[text], images=_images(screenshots), return_tensors="pt")


def build_batch(
    processor: Any,
    samples: Sequence[SampleRecord],
    *,
    viewport: Viewport | None = None,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
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
                processor, s.goal, s.history, s.screenshots, viewport=viewport, history_limit=history_limit
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


# --- log-probs -----------------------------------------------------------------------------------
def completion_logprobs(
    model: Any,
    batch: PolicyBatch,
    *,
    temperature: float = 1.0,
    grad: bool = False,
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-token log-probs of the completion tokens: ``[B, C]`` float32, 0 where the mask is False.

    ``temperature=1`` matches vLLM's ``raw_logprobs``. ``allowed`` (``[B, C, V]`` bool, from
    ``grammar_masks``) renormalises over the tokens a structured-output grammar allowed.
    ``grad=True`` keeps the graph (the learner's policy-gradient step).
    """
    import torch

    core = _unwrap(model)
    context = torch.enable_grad() if grad else torch.no_grad()
    with context:
        hidden = core.model(**batch.model_inputs(), use_cache=False).last_hidden_state  # [B, L, H]
        # The token at position t is predicted by the hidden state at t - 1.
        index = (batch.completion_positions - 1).clamp(min=0)
        picked = torch.gather(hidden, 1, index.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        logits = core.lm_head(picked).float()  # [B, C, V]
        if temperature != 1.0:
            logits = logits / temperature
        if allowed is not None:
            logits = logits.masked_fill(~allowed[..., : logits.shape[-1]], float("-inf"))
        logp = torch.log_softmax(logits, dim=-1)
        out = torch.gather(logp, 2, batch.completion_ids.unsqueeze(-1)).squeeze(-1)
        return out.masked_fill(~batch.completion_mask, 0.0)


def grammar_masks(
    tokenizer: Any,
    regex: str,
    completions: Sequence[Sequence[int]],
    vocab_size: int,
    stop_token_ids: Sequence[int],
) -> torch.Tensor:
    """Allowed-token masks ``[B, C, vocab_size]`` of a regex grammar along each completion.

    Replays xgrammar exactly as vLLM's structured-output backend drives it (``from_huggingface``
    tokenizer info over the model's vocab size, the request's stop tokens as the grammar's end).
    Positions after the grammar terminates (and padding) allow everything.
    """
    import torch
    import xgrammar as xgr

    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
    compiled = xgr.GrammarCompiler(info, max_threads=1).compile_regex(regex)
    width = max(len(c) for c in completions)
    allowed = torch.ones((len(completions), width, vocab_size), dtype=torch.bool)
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    for b, completion in enumerate(completions):
        matcher = xgr.GrammarMatcher(compiled, override_stop_tokens=list(stop_token_ids))
        for t, token in enumerate(completion):
            if matcher.is_terminated():
                break
            matcher.fill_next_token_bitmask(bitmask)
            row = torch.zeros((1, vocab_size), dtype=torch.float32)
            xgr.apply_token_bitmask_inplace(row, bitmask)  # disallowed -> -inf
            allowed[b, t] = torch.isfinite(row[0])
            if not matcher.accept_token(int(token)):
                raise ValueError(f"completion {b}: token {token} at {t} is not allowed by the grammar")
    return allowed
