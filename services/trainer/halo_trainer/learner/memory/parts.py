"""What each part of the learner holds on its card, one micro-batch at a time: the memory plan's
arithmetic (``halo_trainer.learner.memory.plan``), item by item, in GiB.

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
  log-softmax kept for the backward (measured), the ``lm_head`` output (the entropy metric reads
  it; the gradient the backward gives it), and two float32 copies alive during the backward. The
  entropy metric, computed between the forward and the backward, takes its float32 copies a chunk
  of positions at a time (``learner_batch.chunked_entropy``), so it peaks below the backward: the
  head's traced peak at the 8B's vocabulary is 13.0 bytes per vocabulary entry per completion token
  against these 14 (``tests/trainer/learner/test_entropy_peak.py``; 25.0 when the entropy held them at the
  full vocabulary);
* **vision**: the frozen tower keeps nothing for the backward, only its outputs (image
  embeddings and DeepStack features); a tower trained in full keeps its blocks' activations
  (measured per patch, like the decoder layers);
* **inputs**: the micro-batch's pixels (float32, as the processor makes them), once per
  screenshot: the batch holds each distinct screenshot once and the grouped path gives the model a
  prompt's images once (``screenshot_pixel_bytes``); under a structured-output grammar, its
  allowed-token masks ([rows, completion, vocab] booleans);
* **CUDA context** of the trainer's process and a **margin** for the allocator's fragmentation.

The KL reference pass (``kl_coef > 0``) runs without gradients before each micro-batch's gradient
pass: its peak (weights, one layer's temporaries, the reference logits) is computed too and the
plan takes the larger of the two. It adds no weights (LoRA's reference is the same model with the
adapter disabled) and costs one more forward per micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from halo_trainer.learner.memory.dims import (
    DTYPE_BYTES,
    GIB,
    QWEN3_VL_8B_MAX_PIXELS,
    QWEN3_VL_8B_MIN_PIXELS,
    ModelDims,
    image_patches,
)

# bench/results/memory_8b_layer.json: bytes autograd keeps per token (text) or patch (vision) in
# one layer, LoRA r=16 on the decoder, at the 8B's widths (tests/trainer/learner/test_memory_plan.py checks
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

# A float32 copy of the logits is alive twice over during the backward (the gradient of the
# log-softmax's output and of its input); the head's whole term is checked against a traced peak.
HEAD_TRANSIENT_FLOAT32_COPIES = 2
CUDA_CONTEXT_GIB = 0.75  # the trainer's own CUDA context, cuBLAS/cuDNN workspaces
MARGIN_FRACTION = 0.05  # of the learner's peak: the caching allocator's fragmentation
MARGIN_MIN_GIB = 1.0
# The prompt's text: system prompt, tool schema, goal, 8 history actions (907 tokens measured with
# Qwen's tokenizer and a short goal, bench_learner's group), rounded up for longer goals.
PROMPT_TEXT_TOKENS = 1000


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
    # Ranks of the learner across GPUs (FSDP2, ``halo_trainer.learner.distributed``): each card holds
    # 1/N of the weights and of the LoRA's parameters, gradients and AdamW state, and the units being
    # computed whole; a micro-batch's activations are one card's as with one card.
    learner_gpus: int = 1

    def rows(self) -> int:
        return self.micro_batch_size * (2 if self.dpo else 1)

    def prompts(self) -> int:
        """Distinct prompts in one micro-batch (the learner keeps a group's rows together)."""
        share = 2 if self.dpo else max(1, self.group_size)
        return -(-self.rows() // min(share, self.rows()))


def screenshot_patches(dims: ModelDims, work: Workload) -> int:
    """Vision patches of one screenshot at the run's viewport (3,520 for the 8B at 1280x720)."""
    return image_patches(
        *work.viewport,
        max_pixels=work.max_pixels,
        min_pixels=work.min_pixels,
        patch_size=dims.patch_size,
        merge=dims.spatial_merge_size,
    )


def screenshot_pixel_bytes(dims: ModelDims, work: Workload) -> int:
    """One screenshot's pixels as the processor makes them: a float32 vector per patch of
    channels x temporal patch x patch x patch values (1,536 for Qwen3-VL)."""
    width = dims.in_channels * dims.temporal_patch_size * dims.patch_size**2
    return screenshot_patches(dims, work) * width * 4


def update_pixel_bytes(dims: ModelDims, work: Workload, screenshots: int) -> int:
    """The pixels an update's batch holds on the host, ``screenshots`` distinct ones (a step-group run:
    jobs_per_update x max_steps states at the most), each once whatever the number of its rows."""
    return screenshots * screenshot_pixel_bytes(dims, work)


def prompt_tokens(dims: ModelDims, work: Workload) -> int:
    return screenshot_patches(dims, work) // dims.spatial_merge_size**2 + work.prompt_text_tokens


def _coefficient(table: dict[tuple[str, bool], int], dtype: str, checkpointing: bool, width: float) -> float:
    """Bytes per token from the measured table, scaled from the measured widths to this model's."""
    key = ("float32" if DTYPE_BYTES[dtype] == 4 else "bfloat16", checkpointing)
    return table[key] * width


def breakdown(dims: ModelDims, work: Workload) -> tuple[list[tuple[str, float, str]], float]:
    """(the gradient pass's items, the KL reference pass's peak), GiB."""
    b = DTYPE_BYTES[work.dtype]
    rows, prompts, ckpt = work.rows(), work.prompts(), work.gradient_checkpointing
    prompt = prompt_tokens(dims, work)
    tokens = prompts * prompt + rows * work.completion_tokens
    packed_length = prompt + -(-rows // prompts) * work.completion_tokens
    patches = prompts * screenshot_patches(dims, work)
    completion = rows * work.completion_tokens
    text_scale = (dims.hidden_size + dims.intermediate_size) / (
        MEASURED_WIDTHS["hidden_size"] + MEASURED_WIDTHS["intermediate_size"]
    )
    vision_scale = dims.vision_hidden_size / MEASURED_WIDTHS["vision_hidden_size"]
    per_layer = _coefficient(TEXT_LAYER_BYTES, work.dtype, ckpt, text_scale)
    one_layer = _coefficient(TEXT_LAYER_BYTES, work.dtype, False, text_scale)
    full, vision_blocks = dims.full_weight_params(work.full_weights)
    lora = dims.lora_params(work.lora_r, work.lora_targets)

    ranks = work.learner_gpus
    shard = f", 1/{ranks} (FSDP2 shard)" if ranks > 1 else ""
    items: list[tuple[str, float, str]] = [
        ("weights", dims.params() * b / ranks / GIB, f"{dims.params() / 1e9:.2f} B params in {work.dtype}{shard}"),
        ("LoRA + grads + AdamW", lora * 16 / ranks / GIB, f"{lora / 1e6:.1f} M params, float32, 16 B each{shard}"),
    ]
    if ranks > 1:
        # FSDP2 gathers a unit whole for its forward and backward and prefetches the next: two of the
        # largest (the embeddings or lm_head at Qwen3-VL's vocabulary, else a decoder layer).
        embeddings = dims.vocab_size * dims.hidden_size
        head = 0 if dims.tie_word_embeddings else embeddings
        layer = (dims.text_params() - embeddings - head - dims.hidden_size) // dims.num_hidden_layers
        unit = max(embeddings, layer)
        items.append(("units gathered whole (FSDP2)", 2 * unit * b / GIB, f"2 x {unit / 1e6:.0f} M params"))
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
    pixel_bytes = prompts * screenshot_pixel_bytes(dims, work)
    items.append(("pixels of the micro-batch", pixel_bytes / GIB, f"{prompts} screenshots, float32"))
    if work.grammar:
        items.append(("grammar masks", completion * dims.vocab_size / GIB, "bool [rows, completion, vocab]"))
    items.append(("CUDA context", CUDA_CONTEXT_GIB, "the trainer's process"))
    peak = sum(g for _, g, _ in items)
    items.append(("margin (allocator)", max(MARGIN_MIN_GIB, MARGIN_FRACTION * peak), f"{MARGIN_FRACTION:.0%}"))

    reference = 0.0
    if work.kl_coef > 0:
        kept = ("weights", "LoRA + grads + AdamW", "units gathered whole (FSDP2)", "CUDA context")
        persistent = sum(g for name, g, _ in items if name in kept)
        persistent += sum(g for name, g, _ in items if name.startswith("full weights"))
        transient = tokens * one_layer + completion * dims.vocab_size * (b + 8) + vision_out + pixel_bytes + mask
        reference = persistent + transient / GIB + items[-1][1]
    return items, reference
