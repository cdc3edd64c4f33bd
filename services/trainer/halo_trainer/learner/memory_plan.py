"""Will the learner fit on its card beside vLLM? A memory plan, computed before the model is loaded.

The trainer computes it when a run starts on the gpu target and refuses the run when it does not
fit (``halo_trainer.api.runs``), naming the one setting to change; ``halo memory-plan`` (``python -m
halo_trainer.learner.memory_plan``) prints it without starting a run.

What is counted, from the model's config and the run's settings (GiB = 2**30 bytes):

* **weights**: every parameter in the learner's dtype (the learner keeps its own copy; vLLM has another);
* **LoRA**: the adapter's parameters in float32 (``get_peft_model`` casts them up on a bfloat16
  base), their gradients and AdamW's two moments: 16 bytes a parameter;
* **full weights**: the modules trained in full get gradients, AdamW's two moments and the
  learner's frozen reference copy, all in the model's dtype: 4 more copies of those parameters;
* **activations**: what autograd keeps per token per decoder layer (measured at the 8B's widths,
  ``bench/bench_memory_8b_layer.py`` -> ``bench/results/memory_8b_layer.json``, the coefficients
  below). Under gradient checkpointing a layer keeps only its input, and the backward recomputes one
  layer at a time: that layer's full activations are counted once more. Tokens of one micro-batch:
  the learner's grouped path (``halo_model.grouped``) packs the rows that share a prompt into one
  sequence, the prompt once and each completion after it, so a micro-batch holds
  ``prompts x prompt + rows x completion`` tokens. Rows share a prompt in groups of ``group_size``:
  a step group's N candidates (one state), a DPO pair's chosen and rejected actions (one state;
  pairs of one micro-batch are planned at distinct states, the worst case), 1 for episode groups
  (each row its own state). The packed attention mask ([prompts, L, L], L the packed length) is
  counted too;
* **logits**: on the completion positions only (``completion_logprobs``): the float32
  log-softmax kept for the backward (measured), the ``lm_head`` output the entropy metric reads,
  and two float32 copies alive during the backward or the entropy (estimated);
* **vision**: the frozen tower keeps nothing for the backward, only its outputs (image
  embeddings and DeepStack features); a tower trained in full keeps its blocks' activations
  (measured per patch, like the decoder layers);
* **inputs**: the micro-batch's pixels (float32, as the processor makes them) and, under a
  structured-output grammar, its allowed-token masks ([rows, completion, vocab] booleans);
* **CUDA context** of the trainer's process and a **margin** for the allocator's fragmentation.

The KL reference pass (``kl_coef > 0``) runs without gradients before each micro-batch's gradient
pass: its peak (weights, one layer's temporaries, the reference logits) is computed too and the
plan takes the larger of the two. It adds no weights (LoRA's reference is the same model with the
adapter disabled) and costs one more forward per micro-batch.

vLLM's share is ``gpu_memory_utilization`` x the card's total memory; it must hold vLLM's bf16
weights, one ``max_model_len`` sequence of KV cache and vLLM's own working memory (profiling
activations, CUDA graphs, its CUDA context: an estimate, ``VLLM_WORKING_GIB``), or vLLM itself
refuses to start. On one card the learner gets what vLLM leaves (or what the card reports free,
when that is less); on two cards (``HALO_TRAINER_POLICY_SHARES_CARD=false``) its card to itself.

These are computed figures from CPU measurements; no GPU has checked them yet.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

GIB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}

# bench/results/memory_8b_layer.json: bytes autograd keeps per token (text) or patch (vision) in
# one layer, LoRA r=16 on the decoder, at the 8B's widths (tests/trainer/test_memory_plan.py checks
# that these equal the committed results).
TEXT_LAYER_BYTES = {
    ("float32", False): 324328,
    ("float32", True): 16384,
    ("bfloat16", False): 295656,
    ("bfloat16", True): 8192,
}
VISION_BLOCK_BYTES = {
    ("float32", False): 85200,
    ("float32", True): 4608,
    ("bfloat16", False): 42632,
    ("bfloat16", True): 2304,
}
HEAD_SAVED_BYTES_PER_VOCAB = 4.001  # the float32 log-softmax, per completion token and vocabulary entry
MEASURED_WIDTHS = {"hidden_size": 4096, "intermediate_size": 12288, "vision_hidden_size": 1152}

# Estimates, not measured: a float32 copy of the logits is alive twice over during the backward
# (the gradient of the log-softmax's output and of its input) and during the entropy metric.
HEAD_TRANSIENT_FLOAT32_COPIES = 2
CUDA_CONTEXT_GIB = 0.75  # the trainer's own CUDA context, cuBLAS/cuDNN workspaces
MARGIN_FRACTION = 0.05  # of the learner's peak: the caching allocator's fragmentation
MARGIN_MIN_GIB = 1.0
VLLM_WORKING_GIB = 3.0  # vLLM's profiling activations, CUDA graphs and CUDA context inside its share
# The prompt's text: system prompt, tool schema, goal, 8 history actions (907 tokens measured with
# Qwen's tokenizer and a short goal, bench_learner's group), rounded up for longer goals.
PROMPT_TEXT_TOKENS = 1000
LAST_VISION_BLOCKS = 2  # halo_model.full_weights.LAST_BLOCKS (the vision_last_blocks preset)

# Settings the messages name (one owner each).
ENV_DTYPE = "HALO_TRAINER_DTYPE"
ENV_CHECKPOINTING = "HALO_TRAINER_LEARNER__GRADIENT_CHECKPOINTING"
ENV_MICRO_BATCH = "HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE"
ENV_UTILIZATION = "HALO_GPU_MEMORY_UTILIZATION (Compose; HALO_POLICY_GPU_MEMORY_UTILIZATION outside it)"
ENV_SHARES_CARD = "HALO_TRAINER_POLICY_SHARES_CARD"
TWO_CARDS = (
    "use two cards: vLLM on one, the learner on the other (HALO_TRAINER_GPU=1 and "
    f"-f docker-compose.two-gpu.yml: policy device_ids [0], trainer [1], {ENV_SHARES_CARD}=false; docs/compose.md)"
)

# The policy server's defaults (HALO_POLICY_GPU_MEMORY_UTILIZATION, HALO_POLICY_MAX_MODEL_LEN; a test
# checks they are its settings' defaults): the CLI's planning values. A run's check measures instead.
POLICY_UTILIZATION, POLICY_MAX_MODEL_LEN = 0.45, 8192
TWO_CARD_UTILIZATION = 0.90  # vLLM's share of its own card in the two-card layout (docker-compose.two-gpu.yml)
# Nominal cards as torch.cuda.mem_get_info reports their total (about; the driver keeps some).
CARDS_GIB = {"h100-80gb": 79.1, "a100-80gb": 79.1, "h200": 139.8, "a100-40gb": 39.4, "l40s": 44.4}


@dataclass(frozen=True)
class ModelDims:
    """The sizes of a Qwen3-VL model that its memory depends on (its config.json)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vision_depth: int
    vision_hidden_size: int
    vision_heads: int
    vision_intermediate_size: int
    patch_size: int = 16
    temporal_patch_size: int = 2
    spatial_merge_size: int = 2
    in_channels: int = 3
    num_position_embeddings: int = 2304
    deepstack_layers: int = 3
    tie_word_embeddings: bool = False

    @classmethod
    def from_config(cls, config: Any) -> ModelDims:
        """From a transformers ``Qwen3VLConfig`` or its config.json as a dict."""

        def get(obj: Any, name: str, default: Any = None) -> Any:
            value = obj.get(name, default) if isinstance(obj, Mapping) else getattr(obj, name, default)
            return default if value is None else value

        text, vision = get(config, "text_config"), get(config, "vision_config")
        heads = get(text, "num_attention_heads")
        return cls(
            vocab_size=get(text, "vocab_size"),
            hidden_size=get(text, "hidden_size"),
            intermediate_size=get(text, "intermediate_size"),
            num_hidden_layers=get(text, "num_hidden_layers"),
            num_attention_heads=heads,
            num_key_value_heads=get(text, "num_key_value_heads", heads),
            head_dim=get(text, "head_dim", get(text, "hidden_size") // heads),
            vision_depth=get(vision, "depth"),
            vision_hidden_size=get(vision, "hidden_size"),
            vision_heads=get(vision, "num_heads"),
            vision_intermediate_size=get(vision, "intermediate_size"),
            patch_size=get(vision, "patch_size", 16),
            temporal_patch_size=get(vision, "temporal_patch_size", 2),
            spatial_merge_size=get(vision, "spatial_merge_size", 2),
            in_channels=get(vision, "in_channels", 3),
            num_position_embeddings=get(vision, "num_position_embeddings", 2304),
            deepstack_layers=len(get(vision, "deepstack_visual_indexes", ())),
            tie_word_embeddings=bool(get(config, "tie_word_embeddings", get(text, "tie_word_embeddings", False))),
        )

    @classmethod
    def from_pretrained(cls, model: str | Path) -> ModelDims:
        """From a model folder or Hugging Face name (its config.json only, no weights)."""
        from transformers import AutoConfig

        return cls.from_config(AutoConfig.from_pretrained(str(model)))

    # -- parameter counts (tests check them against the model transformers builds) ----------------
    def _linear(self, n_in: int, n_out: int, bias: bool = False) -> int:
        return n_in * n_out + (n_out if bias else 0)

    def projection_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer of a decoder layer: what LoRA adapts."""
        h, q, kv, i = (
            self.hidden_size,
            self.num_attention_heads * self.head_dim,
            self.num_key_value_heads * self.head_dim,
            self.intermediate_size,
        )
        return {
            "q_proj": (h, q),
            "k_proj": (h, kv),
            "v_proj": (h, kv),
            "o_proj": (q, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    def text_params(self) -> int:
        layer = sum(self._linear(a, b) for a, b in self.projection_shapes().values())
        layer += 2 * self.head_dim + 2 * self.hidden_size  # q/k norms, the two RMSNorms
        embeddings = self.vocab_size * self.hidden_size
        head = 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size
        return embeddings + self.num_hidden_layers * layer + self.hidden_size + head

    def vision_block_params(self) -> int:
        vh, vi = self.vision_hidden_size, self.vision_intermediate_size
        return (
            4 * vh
            + self._linear(vh, 3 * vh, True)
            + self._linear(vh, vh, True)
            + self._linear(vh, vi, True)
            + (self._linear(vi, vh, True))
        )

    def vision_merger_params(self) -> int:
        """The merger and the DeepStack mergers: the projections into the language model."""
        merged = self.vision_hidden_size * self.spatial_merge_size**2

        def merger(norm_width: int) -> int:
            return 2 * norm_width + self._linear(merged, merged, True) + self._linear(merged, self.hidden_size, True)

        return merger(self.vision_hidden_size) + self.deepstack_layers * merger(merged)

    def vision_params(self) -> int:
        patch = self.in_channels * self.temporal_patch_size * self.patch_size**2 * self.vision_hidden_size
        patch += self.vision_hidden_size  # the patch embedding's bias
        positions = self.num_position_embeddings * self.vision_hidden_size
        return patch + positions + self.vision_depth * self.vision_block_params() + self.vision_merger_params()

    def params(self) -> int:
        return self.text_params() + self.vision_params()

    def lora_params(self, rank: int, targets: Sequence[str]) -> int:
        shapes = self.projection_shapes()
        return self.num_hidden_layers * sum(rank * sum(shapes[t]) for t in targets if t in shapes)

    def full_weight_params(self, names: Sequence[str]) -> tuple[int, int]:
        """(parameters trained in full, vision blocks whose activations the backward keeps) for
        ``full_weights`` presets and module names (``halo_model.full_weights``)."""
        total, blocks = 0, 0
        for name in names:
            if name == "all":
                return self.params(), self.vision_depth
            if name == "vision":
                total += self.vision_params()
                blocks = self.vision_depth
            elif name == "vision_merger":
                total += self.vision_merger_params()
            elif name == "vision_last_blocks":
                n = min(LAST_VISION_BLOCKS, self.vision_depth)
                total += n * self.vision_block_params()
                blocks = max(blocks, n)
            elif name.startswith("model.visual.blocks."):
                index = int(name.removeprefix("model.visual.blocks.").split(".")[0])
                total += self.vision_block_params()
                blocks = max(blocks, self.vision_depth - index)
            elif name == "lm_head":
                total += self.vocab_size * self.hidden_size
            else:  # another module name: counted as the whole vision tower, an upper bound
                total += self.vision_params()
                blocks = self.vision_depth
        return total, blocks

    def kv_bytes_per_token(self, dtype: str = "bfloat16") -> int:
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * DTYPE_BYTES[dtype]


# Qwen3-VL-8B-Instruct's config.json: the one declaration (bench/gpu_learner_8b.py builds a random model of these sizes).
QWEN3_VL_8B = ModelDims(
    vocab_size=151936,
    hidden_size=4096,
    intermediate_size=12288,
    num_hidden_layers=36,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    vision_depth=27,
    vision_hidden_size=1152,
    vision_heads=16,
    vision_intermediate_size=4304,
    num_position_embeddings=2304,
    deepstack_layers=3,
)
QWEN3_VL_8B_MAX_PIXELS, QWEN3_VL_8B_MIN_PIXELS = 16777216, 65536  # its preprocessor_config.json


def image_patches(
    width: int, height: int, *, max_pixels: int, min_pixels: int, patch_size: int = 16, merge: int = 2
) -> int:
    """Vision patches of one screenshot after Qwen's ``smart_resize`` (a token is merge**2 patches)."""
    factor = patch_size * merge
    h, w = round(height / factor) * factor, round(width / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h, w = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return (h // patch_size) * (w // patch_size)


@dataclass(frozen=True)
class Workload:
    """What one micro-batch of the learner holds, and how it trains."""

    dtype: str = "bfloat16"
    gradient_checkpointing: bool = True
    micro_batch_size: int = 8
    completion_tokens: int = 256
    viewport: tuple[int, int] = (1280, 720)
    max_pixels: int = QWEN3_VL_8B_MAX_PIXELS
    min_pixels: int = QWEN3_VL_8B_MIN_PIXELS
    prompt_text_tokens: int = PROMPT_TEXT_TOKENS
    lora_r: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    full_weights: tuple[str, ...] = ()
    kl_coef: float = 0.0
    grammar: bool = False  # structured outputs (regex): allowed-token masks travel with the batch
    dpo: bool = False  # MCTS: a micro-batch holds each pair's chosen and rejected rows
    # Rows that share one prompt, which the grouped path scores once (module docstring): a step
    # group's N; DPO's pair (2); 1 = every row its own prompt (episode groups, the per-row path).
    group_size: int = 8

    def rows(self) -> int:
        return self.micro_batch_size * (2 if self.dpo else 1)

    def prompts(self) -> int:
        """Distinct prompts in one micro-batch (the learner keeps a group's rows together)."""
        share = 2 if self.dpo else max(1, self.group_size)
        return -(-self.rows() // min(share, self.rows()))


@dataclass(frozen=True)
class Card:
    """The learner's card and what runs beside it."""

    total_gib: float
    # Measured (torch.cuda.mem_get_info) at a run's start, vLLM already holding its share: what the
    # learner gets. None = planned: the whole card, less vLLM's share when it shares the card.
    free_gib: float | None = None
    policy_shares_card: bool = True
    gpu_memory_utilization: float = 0.45
    policy_max_model_len: int = 8192
    # The card vLLM runs on when it is not this one: None = not known here (the trainer's start check
    # on two cards; vLLM refuses to start itself when its share is too small).
    policy_card_gib: float | None = None

    @property
    def vllm_card_gib(self) -> float | None:
        """vLLM's card when its share is checked here; None at a run's start (measured free memory
        already shows what vLLM took, and vLLM refuses to start itself when its share is too small)."""
        if self.free_gib is not None:
            return None
        return self.total_gib if self.policy_shares_card else self.policy_card_gib


@dataclass
class MemoryPlan:
    dims: ModelDims
    work: Workload
    card: Card
    items: list[tuple[str, float, str]] = field(default_factory=list)
    reference_pass_gib: float = 0.0
    vllm_share_gib: float = 0.0
    vllm_need_gib: float = 0.0
    available_gib: float = 0.0
    fix: str | None = None

    @property
    def learner_gib(self) -> float:
        return sum(gib for _, gib, _ in self.items)

    @property
    def peak_gib(self) -> float:
        """The learner's peak: the gradient pass or the KL reference pass, whichever is larger."""
        return max(self.learner_gib, self.reference_pass_gib)

    @property
    def vllm_fits(self) -> bool:
        return self.card.vllm_card_gib is None or self.vllm_share_gib >= self.vllm_need_gib

    @property
    def learner_fits(self) -> bool:
        return self.peak_gib <= self.available_gib

    @property
    def fits(self) -> bool:
        return self.vllm_fits and self.learner_fits

    @property
    def headroom_gib(self) -> float:
        return self.available_gib - self.peak_gib

    def problem(self) -> str | None:
        if not self.vllm_fits:
            return (
                f"vLLM's share ({self.card.gpu_memory_utilization:.2f} x {self.card.vllm_card_gib:.1f} GiB = "
                f"{self.vllm_share_gib:.1f} GiB) is below what it needs: {self.vllm_need_gib:.1f} GiB "
                f"(bf16 weights {self.dims.params() * 2 / GIB:.1f}, KV cache for {self.card.policy_max_model_len} "
                f"tokens, {VLLM_WORKING_GIB:.1f} working)"
            )
        if not self.learner_fits:
            return (
                f"the learner needs {self.peak_gib:.1f} GiB at its peak but has {self.available_gib:.1f} GiB "
                f"({'beside vLLM on a shared' if self.card.policy_shares_card else 'on its own'} "
                f"{self.card.total_gib:.1f} GiB card)"
            )
        return None

    def table(self) -> str:
        w = self.work
        lines = [
            f"memory plan: Qwen3-VL {self.dims.params() / 1e9:.2f} B params, learner {w.dtype}, gradient "
            f"checkpointing {'on' if w.gradient_checkpointing else 'off'}, micro-batch {w.micro_batch_size}"
            f"{' DPO pairs' if w.dpo else ''} ({w.prompts()} prompts, packed), {self.prompt_tokens()} prompt + "
            f"{w.completion_tokens} completion tokens a row, LoRA r={w.lora_r}, full weights {list(w.full_weights) or 'none'}, kl_coef {w.kl_coef}",
        ]
        lines += [f"  {name:<34} {gib:7.2f} GiB  {note}" for name, gib, note in self.items]
        lines.append(f"  {'learner peak':<34} {self.peak_gib:7.2f} GiB")
        if self.work.kl_coef > 0:
            lines.append(
                f"  {'(KL reference pass peak)':<34} {self.reference_pass_gib:7.2f} GiB  no gradients, before each "
                "micro-batch's gradient pass: one more forward"
            )
        where = "beside vLLM" if self.card.policy_shares_card else "its own card"
        lines.append(f"  {'available to the learner':<34} {self.available_gib:7.2f} GiB  {where}")
        if self.card.vllm_card_gib is None:
            lines.append(f"  vLLM: on another card, not checked here (it needs {self.vllm_need_gib:.2f} GiB of it)")
        else:
            lines.append(
                f"  vLLM: share {self.vllm_share_gib:.2f} GiB (gpu_memory_utilization "
                f"{self.card.gpu_memory_utilization:.2f} x {self.card.vllm_card_gib:.1f} GiB), "
                f"needs {self.vllm_need_gib:.2f}"
            )
        lines.append(self.verdict())
        return "\n".join(lines)

    def verdict(self) -> str:
        if self.fits:
            return f"fits: {self.headroom_gib:.1f} GiB to spare"
        return f"does not fit: {self.problem()}. " + (self.fix or "")

    def prompt_tokens(self) -> int:
        return prompt_tokens(self.dims, self.work)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "items_gib": {name: round(gib, 3) for name, gib, _ in self.items},
            "learner_peak_gib": round(self.peak_gib, 3),
            "reference_pass_gib": round(self.reference_pass_gib, 3),
            "available_gib": round(self.available_gib, 3),
            "headroom_gib": round(self.headroom_gib, 3),
            "vllm_share_gib": round(self.vllm_share_gib, 3),
            "vllm_need_gib": round(self.vllm_need_gib, 3),
            "problem": self.problem(),
            "fix": self.fix,
        }


def prompt_tokens(dims: ModelDims, work: Workload) -> int:
    patches = image_patches(
        *work.viewport,
        max_pixels=work.max_pixels,
        min_pixels=work.min_pixels,
        patch_size=dims.patch_size,
        merge=dims.spatial_merge_size,
    )
    return patches // dims.spatial_merge_size**2 + work.prompt_text_tokens


def _coefficient(table: dict[tuple[str, bool], int], dtype: str, checkpointing: bool, width: float) -> float:
    """Bytes per token from the measured table, scaled from the measured widths to this model's."""
    key = ("float32" if DTYPE_BYTES[dtype] == 4 else "bfloat16", checkpointing)
    return table[key] * width


def _breakdown(dims: ModelDims, work: Workload) -> tuple[list[tuple[str, float, str]], float]:
    """(the gradient pass's items, the KL reference pass's peak), GiB."""
    b = DTYPE_BYTES[work.dtype]
    rows, prompts, ckpt = work.rows(), work.prompts(), work.gradient_checkpointing
    prompt = prompt_tokens(dims, work)
    tokens = prompts * prompt + rows * work.completion_tokens
    packed_length = prompt + -(-rows // prompts) * work.completion_tokens
    patches = prompts * image_patches(
        *work.viewport,
        max_pixels=work.max_pixels,
        min_pixels=work.min_pixels,
        patch_size=dims.patch_size,
        merge=dims.spatial_merge_size,
    )
    completion = rows * work.completion_tokens
    text_scale = (dims.hidden_size + dims.intermediate_size) / (
        MEASURED_WIDTHS["hidden_size"] + MEASURED_WIDTHS["intermediate_size"]
    )
    vision_scale = dims.vision_hidden_size / MEASURED_WIDTHS["vision_hidden_size"]
    per_layer = _coefficient(TEXT_LAYER_BYTES, work.dtype, ckpt, text_scale)
    one_layer = _coefficient(TEXT_LAYER_BYTES, work.dtype, False, text_scale)
    full, vision_blocks = dims.full_weight_params(work.full_weights)
    lora = dims.lora_params(work.lora_r, work.lora_targets)

    items: list[tuple[str, float, str]] = [
        ("weights", dims.params() * b / GIB, f"{dims.params() / 1e9:.2f} B params in {work.dtype}"),
        ("LoRA + grads + AdamW", lora * 16 / GIB, f"{lora / 1e6:.1f} M params, float32, 16 B each"),
    ]
    if full:
        items.append(
            ("full weights: reference, grads, AdamW", full * 4 * b / GIB, f"{full / 1e6:.0f} M params x 4 copies")
        )
    note = (
        f"{prompts} prompts x {prompt} + {rows} completions x {work.completion_tokens} tokens"
        f" x {dims.num_hidden_layers} layers"
    )
    items.append(("decoder activations", tokens * dims.num_hidden_layers * per_layer / GIB, note))
    if ckpt:
        items.append(("one layer recomputed (backward)", tokens * one_layer / GIB, "gradient checkpointing"))
    # Embeddings' output, the final norm's float32 copy and the hidden-state gradient of the backward.
    items.append(("embeddings, final norm, grads", tokens * dims.hidden_size * (3 * b + 4) / GIB, "per token"))
    # The packed sequence's attention mask (the grouped path's custom mask), float32 at the most.
    mask = prompts * packed_length**2 * 4
    items.append(("packed attention mask", mask / GIB, f"{prompts} x {packed_length}^2"))
    vision_out = prompts * (prompt - work.prompt_text_tokens) * dims.hidden_size * b * (1 + dims.deepstack_layers)
    items.append(("vision outputs (image + DeepStack)", vision_out / GIB, "the frozen tower keeps nothing else"))
    if vision_blocks:
        vscale = vision_scale
        kept = patches * vision_blocks * _coefficient(VISION_BLOCK_BYTES, work.dtype, ckpt, vscale)
        if ckpt:
            kept += patches * _coefficient(VISION_BLOCK_BYTES, work.dtype, False, vscale)
        items.append(("vision activations (trained)", kept / GIB, f"{patches} patches x {vision_blocks} blocks"))
    head_per_token = dims.vocab_size * (HEAD_SAVED_BYTES_PER_VOCAB + b + 4 * HEAD_TRANSIENT_FLOAT32_COPIES)
    items.append(("logits (completion positions)", completion * head_per_token / GIB, f"{completion} tokens"))
    pixel_bytes = patches * dims.in_channels * dims.temporal_patch_size * dims.patch_size**2 * 4
    items.append(("pixels of the micro-batch", pixel_bytes / GIB, "float32"))
    if work.grammar:
        items.append(("grammar masks", completion * dims.vocab_size / GIB, "bool [rows, completion, vocab]"))
    items.append(("CUDA context", CUDA_CONTEXT_GIB, "the trainer's process"))
    peak = sum(g for _, g, _ in items)
    items.append(("margin (allocator)", max(MARGIN_MIN_GIB, MARGIN_FRACTION * peak), f"{MARGIN_FRACTION:.0%}"))

    reference = 0.0
    if work.kl_coef > 0:
        persistent = sum(g for name, g, _ in items if name in ("weights", "LoRA + grads + AdamW", "CUDA context"))
        persistent += sum(g for name, g, _ in items if name.startswith("full weights"))
        transient = tokens * one_layer + completion * dims.vocab_size * (b + 8) + vision_out + pixel_bytes + mask
        reference = persistent + transient / GIB + items[-1][1]
    return items, reference


def plan(dims: ModelDims, work: Workload, card: Card) -> MemoryPlan:
    """The plan at these settings, with the one change that makes it fit when it does not."""
    result = _plan(dims, work, card)
    if not result.fits:
        result.fix = _fix(dims, work, card)
    return result


def _plan(dims: ModelDims, work: Workload, card: Card) -> MemoryPlan:
    items, reference = _breakdown(dims, work)
    vllm_share = card.gpu_memory_utilization * (card.vllm_card_gib or 0.0)
    vllm_need = vllm_minimum_gib(dims, card.policy_max_model_len)
    if card.free_gib is not None:
        available = card.free_gib + CUDA_CONTEXT_GIB  # measured after the context, which is one of the items
    elif card.policy_shares_card:
        available = card.total_gib - vllm_share
    else:
        available = card.total_gib
    return MemoryPlan(
        dims, work, card, items, reference, vllm_share_gib=vllm_share, vllm_need_gib=vllm_need, available_gib=available
    )


def vllm_minimum_gib(dims: ModelDims, max_model_len: int) -> float:
    """vLLM's bf16 weights, the KV cache of one max_model_len sequence, its working memory."""
    return (dims.params() * 2 + dims.kv_bytes_per_token() * max_model_len) / GIB + VLLM_WORKING_GIB


def _fix(dims: ModelDims, work: Workload, card: Card) -> str:
    """The smallest change that fits: vLLM's share first, then the learner's own settings, then two cards."""
    base = _plan(dims, work, card)
    if not base.vllm_fits:
        if not card.policy_shares_card:
            least = math.ceil(100 * base.vllm_need_gib / (card.vllm_card_gib or card.total_gib)) / 100
            return f"give vLLM's card a larger share: {ENV_UTILIZATION} >= {least:.2f}"
        needed = math.ceil(100 * base.vllm_need_gib / card.total_gib) / 100
        raised = replace(card, gpu_memory_utilization=needed)
        if needed <= 0.95 and _plan(dims, work, raised).fits:
            return f"set {ENV_UTILIZATION}={needed:.2f}"
        return _two_cards(dims, work, card)

    changes: list[tuple[str, Callable[[Workload], Workload]]] = []
    if DTYPE_BYTES[work.dtype] == 4:
        changes.append((f"{ENV_DTYPE}=bfloat16", lambda w: replace(w, dtype="bfloat16")))
    if not work.gradient_checkpointing:
        changes.append((f"{ENV_CHECKPOINTING}=true", lambda w: replace(w, gradient_checkpointing=True)))
    combos = [c for n in range(1, len(changes) + 1) for c in itertools.combinations(changes, n)]

    def applied(chosen: Sequence[tuple[str, Callable[[Workload], Workload]]]) -> Workload:
        trial = work
        for _, change in chosen:
            trial = change(trial)
        return trial

    # The fewest changes that keep the micro-batch, then the largest micro-batch that fits, then
    # a smaller share for vLLM (fewer concurrent rollouts), then another card.
    for chosen in combos:
        if _plan(dims, applied(chosen), card).fits:
            return "set " + " and ".join(name for name, _ in chosen)
    for chosen in [(), *combos]:
        micro = _largest_micro_batch(dims, applied(chosen), card)
        if micro is not None:
            return "set " + " and ".join([*(name for name, _ in chosen), f"{ENV_MICRO_BATCH}={micro}"])
    if card.policy_shares_card:
        lowest = math.ceil(100 * base.vllm_need_gib / card.total_gib) / 100
        lowered = replace(card, gpu_memory_utilization=lowest, free_gib=None)
        if _plan(dims, work, lowered).fits:
            return f"set {ENV_UTILIZATION}={lowest:.2f} (the least that holds vLLM: fewer concurrent rollouts)"
    if card.policy_shares_card:
        return _two_cards(dims, work, card)
    alone = _plan(dims, replace(work, micro_batch_size=1, dtype="bfloat16", gradient_checkpointing=True), card)
    return f"the learner needs {alone.peak_gib:.1f} GiB even at micro-batch 1 in bfloat16 with checkpointing: use a larger card"


def _two_cards(dims: ModelDims, work: Workload, card: Card) -> str:
    alone = replace(
        card, policy_shares_card=False, free_gib=None, gpu_memory_utilization=TWO_CARD_UTILIZATION, policy_card_gib=None
    )
    trial = _plan(dims, work, alone)
    if trial.fits:
        return f"{TWO_CARDS}: the learner then needs {trial.peak_gib:.1f} of {card.total_gib:.1f} GiB"
    micro = _largest_micro_batch(dims, replace(work, dtype="bfloat16", gradient_checkpointing=True), alone)
    if micro is not None:
        return f"{TWO_CARDS}, with {ENV_DTYPE}=bfloat16, {ENV_CHECKPOINTING}=true and {ENV_MICRO_BATCH}={micro}"
    return f"this card ({card.total_gib:.1f} GiB) is too small for the learner even alone: use a larger card"


def _largest_micro_batch(dims: ModelDims, work: Workload, card: Card) -> int | None:
    for micro in range(work.micro_batch_size, 0, -1):
        if _plan(dims, replace(work, micro_batch_size=micro), card).fits:
            return micro
    return None


# -- from the trainer's settings ----------------------------------------------------------------
def workload_for(run: Any, learner: Any, dtype: str, processor: Any = None) -> Workload:
    """A run's workload: ``run`` a ``RunConfig``, ``learner`` its resolved ``LearnerConfig``, ``processor``
    the model's (its image budget; None = the 8B's published one)."""
    max_pixels, min_pixels = pixel_limits(processor)
    viewport = run.sampling.viewport
    return Workload(
        dtype=dtype,
        gradient_checkpointing=bool(learner.gradient_checkpointing),
        micro_batch_size=learner.micro_batch_size,
        completion_tokens=run.sampling.max_tokens,
        viewport=(viewport.width, viewport.height),
        max_pixels=max_pixels,
        min_pixels=min_pixels,
        lora_r=learner.lora_r,
        lora_targets=tuple(learner.lora_target_modules),
        full_weights=tuple(learner.full_weights),
        kl_coef=learner.kl_coef,
        grammar=run.sampling.structured_outputs == "regex",
        dpo=str(getattr(run.algorithm, "value", run.algorithm)) == "mcts",
        group_size=run.num_generations if str(getattr(run.group_mode, "value", run.group_mode)) == "step" else 1,
    )


def pixel_limits(processor: Any) -> tuple[int, int]:
    """(max, min) pixels of an image after the processor resizes it."""
    image = getattr(processor, "image_processor", None)
    size = getattr(image, "size", None) or {}
    max_pixels = size.get("longest_edge") or getattr(image, "max_pixels", None) or QWEN3_VL_8B_MAX_PIXELS
    min_pixels = size.get("shortest_edge") or getattr(image, "min_pixels", None) or QWEN3_VL_8B_MIN_PIXELS
    return int(max_pixels), int(min_pixels)


def card_from_device(device: str, shares_card: bool) -> Card:
    """The learner's CUDA card as it is now (torch.cuda.mem_get_info): on a shared card vLLM (started
    first, as Compose orders it) already holds its share, so the free memory is the learner's."""
    import torch

    free, total = torch.cuda.mem_get_info(torch.device(device))
    return Card(total_gib=total / GIB, free_gib=free / GIB, policy_shares_card=shares_card)


# -- command line ---------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Print the plan of the gpu target's defaults (the trainer's settings, configs/rl_config.yaml)
    for a card, or of the card this machine has."""
    from halo.schemas import RunSpec
    from halo.settings.trainer import TrainerSettings
    from halo_trainer.config import load_defaults, profile_for, resolve

    parser = argparse.ArgumentParser(prog="halo memory-plan", description=main.__doc__)
    parser.add_argument("--card-gib", type=float, help=f"card total, GiB as torch reports it ({CARDS_GIB})")
    parser.add_argument("--card", choices=sorted(CARDS_GIB), help="a named card instead of --card-gib")
    parser.add_argument(
        "--gpu-memory-utilization",
        type=float,
        help=f"vLLM's share (default: {POLICY_UTILIZATION} on a shared card, the policy's default; "
        f"{TWO_CARD_UTILIZATION} on its own)",
    )
    parser.add_argument("--max-model-len", type=int, default=POLICY_MAX_MODEL_LEN, help="vLLM's context, tokens")
    parser.add_argument("--two-cards", action="store_true", help="vLLM on another card (the learner's card alone)")
    parser.add_argument("--micro-batch-size", type=int, help="override HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE")
    parser.add_argument("--dtype", choices=sorted(DTYPE_BYTES), help="override HALO_TRAINER_DTYPE")
    parser.add_argument("--no-checkpointing", action="store_true", help="gradient checkpointing off")
    parser.add_argument("--full-weights", nargs="*", default=None, help="full_weights presets or module names")
    parser.add_argument("--algorithm", choices=["grpo", "mcts"], default="grpo")
    parser.add_argument("--model", help="config.json folder or name (default: the 8B's published sizes)")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    args = parser.parse_args(argv)

    settings = TrainerSettings(target="gpu")
    spec: dict[str, Any] = {"domain": "plan", "algorithm": args.algorithm}
    if args.full_weights is not None:
        spec["full_weights"] = args.full_weights
    cfg = resolve(RunSpec(**spec), "plan", ["plan"], load_defaults(settings.rl_config), profile_for("gpu"))
    learner = cfg.learner_config(settings.resolved_learner())
    work = workload_for(cfg, learner, args.dtype or settings.resolved_dtype())
    if args.micro_batch_size:
        work = replace(work, micro_batch_size=args.micro_batch_size)
    if args.no_checkpointing:
        work = replace(work, gradient_checkpointing=False)
    dims = ModelDims.from_pretrained(args.model) if args.model else QWEN3_VL_8B
    shares = settings.policy_shares_card and not args.two_cards
    utilization = args.gpu_memory_utilization or (POLICY_UTILIZATION if shares else TWO_CARD_UTILIZATION)
    if args.card or args.card_gib:
        card = Card(
            total_gib=CARDS_GIB[args.card] if args.card else args.card_gib,
            policy_shares_card=shares,
            gpu_memory_utilization=utilization,
            policy_max_model_len=args.max_model_len,
            policy_card_gib=None if shares else (CARDS_GIB[args.card] if args.card else args.card_gib),
        )
    else:
        try:
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("no CUDA device here")
            card = card_from_device("cuda", shares)
        except RuntimeError as exc:
            parser.error(f"{exc}: give the card with --card-gib or --card")
    result = plan(dims, work, card)
    sys.stdout.write((json.dumps(result.as_dict(), indent=1) if args.json else result.table()) + "\n")
    return 0 if result.fits else 1


if __name__ == "__main__":
    sys.exit(main())
