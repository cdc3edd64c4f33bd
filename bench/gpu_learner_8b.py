"""One GRPO learner update at Qwen3-VL-8B-Instruct's real dimensions (random weights) on a GPU.

What the 8B learner costs, before any checkpoint is downloaded: the project's `Learner` (the same
code the trainer runs) on a randomly initialised Qwen3-VL with the 8B model's published sizes,
bf16, LoRA r=16 on the language model, gradient checkpointing, one update on a group of 8
computer-use completions that share a 1280x720 screenshot prompt. The prompt is tokenized with the
tiny model's tokenizer (ids fit in the 8B vocabulary) and an image processor set to Qwen3-VL's real
pixel limits, so the screenshot becomes as many vision tokens as on the real model.

Reported: the update's wall time (median of --updates after one warm-up), peak GPU memory, and
model FLOP utilisation (MFU) against the card's bf16 matmul rate measured here. FLOPs are counted,
not estimated: torch's FlopCounterMode runs one forward pass of the batch, F. A LoRA update does
the forward (F) and the backward through the frozen weights to the activations (about F; frozen
weights get no weight gradient, LoRA's own are negligible): model FLOPs = 2F. Gradient
checkpointing recomputes the forward once more, so the hardware executes about 3F; that is the
hardware utilisation (HFU) also reported.

``--full-weights vision`` (any ``full_weights`` entries, ``halo_model.full_weights``) also trains
those base-model modules in full, in the model's dtype, with their AdamW state and the learner's
frozen reference copy: it measures their memory and time. Their weight gradients are not in the
2F count, so MFU and HFU are then lower bounds.

    python bench/gpu_learner_8b.py                      # on a GPU box (CUDA): the 8B dimensions
    python bench/gpu_learner_8b.py --full-weights vision  # ... training the vision tower in full too
    python bench/gpu_learner_8b.py --dims tiny          # the same code at toy sizes, on the CPU

Writes bench/results/gpu_learner_<dims>[_<full weights>].json and prints a summary. `make bench` does not run it
(it needs a CUDA GPU); see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_learner import group_samples  # noqa: E402

from halo.settings.trainer import LearnerConfig  # noqa: E402
from halo_model.inputs import build_batch  # noqa: E402
from halo_model.loading import load_processor  # noqa: E402
from halo_model.tiny import TinyModelParams, build_tiny_model, qwen3vl_config  # noqa: E402
from halo_trainer.learner import Learner, LearnerBatch  # noqa: E402

# Qwen3-VL-8B-Instruct's config.json and preprocessor_config.json (at these pixel limits a
# 1280x720 screenshot keeps its full resolution); `tiny` is the project's tiny model, so the script
# itself is checked on machines without a GPU.
DIMS: dict[str, TinyModelParams] = {
    "8b": TinyModelParams(
        vocab_size=151936,
        hidden_size=4096,
        intermediate_size=12288,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        mrope_section=(24, 20, 20),
        max_position_embeddings=262144,
        vision_depth=27,
        vision_hidden_size=1152,
        vision_heads=16,
        vision_intermediate_size=4304,
        deepstack_visual_indexes=(8, 16, 24),
        num_position_embeddings=2304,
        max_pixels=16777216,
        min_pixels=65536,
        initializer_range=0.02,
    ),
    "tiny": TinyModelParams(),
}


def random_model(params: TinyModelParams, tokenizer, dtype: torch.dtype, device: str) -> torch.nn.Module:
    """A randomly initialised Qwen3-VL of the given sizes, built directly on the device in ``dtype``."""
    from transformers import Qwen3VLForConditionalGeneration

    config = qwen3vl_config(params, tokenizer, vocab_size=params.vocab_size)
    config.text_config.dtype = dtype  # the tiny model's config pins its language model to float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # an 8B model built in float32 first would need twice the memory
    try:
        with torch.device(device):
            torch.manual_seed(0)
            model = Qwen3VLForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(previous)
    return model.eval()


def matmul_tflops(dtype: torch.dtype, device: str, n: int, repeat: int) -> float:
    """The card's achieved dense matmul rate (the MFU denominator), best of a few timed batches."""
    a = torch.randn(n, n, dtype=dtype, device=device)
    b = torch.randn(n, n, dtype=dtype, device=device)
    best = 0.0
    for _ in range(3):
        sync(device)
        start = time.perf_counter()
        for _ in range(repeat):
            a @ b
        sync(device)
        best = max(best, 2 * n**3 * repeat / (time.perf_counter() - start) / 1e12)
    return best


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def forward_flops(learner: Learner, batch: LearnerBatch) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        learner.logprobs(batch)
    return counter.get_total_flops()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", choices=sorted(DIMS), default="8b")
    parser.add_argument("--updates", type=int, default=3, help="timed updates (after one warm-up)")
    parser.add_argument("--group", type=int, default=8, help="completions per update (one screenshot prompt)")
    parser.add_argument("--micro-batch", type=int, default=8, help="completions per forward/backward")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--full-weights",
        nargs="*",
        default=[],
        help="also train these base-model modules in full: vision_merger, vision_last_blocks, vision, all, or names",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="default: bench/results/gpu_learner_<dims>[_<full weights>].json"
    )
    args = parser.parse_args()
    if args.dims == "8b" and not args.device.startswith("cuda"):
        parser.error("the 8B dimensions need a CUDA GPU (use --dims tiny to check the script on the CPU)")
    params = DIMS[args.dims]
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32

    size = {"shortest_edge": params.min_pixels, "longest_edge": params.max_pixels}
    processor = load_processor(build_tiny_model(), size=size)
    tokenizer = processor.tokenizer
    samples = group_samples(tokenizer, args.group)
    inputs = build_batch(processor, samples)
    rewards = torch.tensor([float(i % 3 == 0) for i in range(args.group)])
    batch = LearnerBatch(inputs=inputs, advantages=rewards - rewards.mean())
    max_completion = int(inputs.completion_mask.sum(-1).max())

    t0 = time.perf_counter()
    model = random_model(params, tokenizer, dtype, args.device)
    build_s = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    config = LearnerConfig(
        learning_rate=1e-5,
        lora_r=16,
        lora_alpha=32,
        kl_coef=0.0,
        gradient_checkpointing=True,
        micro_batch_size=args.micro_batch,
        max_completion_tokens=max(256, max_completion),
        full_weights=tuple(args.full_weights),
        full_weights_lr=1e-7,
    )
    try:
        learner = Learner(model, config)
    except ValueError as exc:  # a --full-weights entry the model does not have
        parser.error(str(exc))
    flops = forward_flops(learner, batch)

    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    learner.update(batch)  # warm-up: kernels, allocator, optimizer state
    times = []
    for i in range(args.updates):
        sync(args.device)
        start = time.perf_counter()
        metrics = learner.update(batch)
        sync(args.device)
        times.append(time.perf_counter() - start)
        print(f"  update {i + 1}/{args.updates}: {times[-1]:.2f} s, loss {metrics['train/loss']:.4f}", flush=True)
    step_s = statistics.median(times)
    peak_gib = torch.cuda.max_memory_allocated() / 2**30 if args.device.startswith("cuda") else None
    rate = matmul_tflops(dtype, args.device, 8192 if args.device.startswith("cuda") else 1024, 20)

    results = {
        "dims": args.dims,
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor() or "cpu",
        "dtype": str(dtype).removeprefix("torch."),
        "torch": torch.__version__,
        "params": n_params,
        "lora_params": sum(p.numel() for p in learner.lora_params),
        "full_weights": list(args.full_weights),
        "full_weight_params": sum(p.numel() for p in learner.full_params),
        "group": args.group,
        "micro_batch": args.micro_batch,
        "sequence_tokens": int(inputs.input_ids.shape[1]),
        "image_tokens": int((inputs.mm_token_type_ids[0] == 1).sum()),
        "completion_tokens": int(inputs.completion_mask.sum()),
        "model_build_s": build_s,
        "update_s_median": step_s,
        "update_s_all": times,
        "peak_memory_gib": peak_gib,
        "forward_tflop": flops / 1e12,
        "model_tflop_per_update": 2 * flops / 1e12,
        "matmul_tflops_measured": rate,
        "mfu": 2 * flops / step_s / 1e12 / rate,
        "hfu": 3 * flops / step_s / 1e12 / rate,
    }
    suffix = "".join(f"_{name}" for name in args.full_weights)
    out = args.out or ROOT / "bench" / "results" / f"gpu_learner_{args.dims}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    memory = f"{peak_gib:.1f} GiB peak" if peak_gib is not None else "CPU (no GPU memory figure)"
    print(
        f"Qwen3-VL {args.dims} ({n_params / 1e6:,.1f} M params, LoRA {results['lora_params'] / 1e6:.2f} M, "
        f"full weights {results['full_weight_params'] / 1e6:.2f} M), "
        f"group {args.group} x {results['sequence_tokens']} tokens ({results['image_tokens']} image) on "
        f"{results['device']}: update {step_s:.2f} s, {memory}, "
        f"MFU {results['mfu']:.1%} (HFU {results['hfu']:.1%}) of a measured {rate:.3g} TFLOP/s; written to {out}"
    )


if __name__ == "__main__":
    main()
