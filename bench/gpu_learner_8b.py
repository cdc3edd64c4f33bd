"""One learner update the size of a real job at Qwen3-VL-8B-Instruct's dimensions (random weights) on a GPU.

What the 8B learner costs, before any checkpoint is downloaded: the project's `Learner` (the same
code the trainer runs) on a randomly initialised Qwen3-VL with the 8B model's published sizes,
configured the way the trainer configures it: the gpu target's resolved `TrainerSettings`
(bfloat16, gradient checkpointing, micro-batch) and configs/rl_config.yaml's values through
`resolve` and `RunConfig.learner_config` (LoRA r=16, kl_coef, PPO clip, truncated importance
sampling, Dr. GRPO's normaliser), its log-probs at the run's temperature as `halo_trainer.api.runs`
builds them. The update is one step-group job: `max_steps` steps x `num_generations` candidates,
each step its own 1280x720 screenshot prompt (~1,880 tokens with the goal and 8 history actions),
every completion `sampling.max_tokens` (256) tokens long. Then one DPO step (`dpo_update`)
on pairs of those candidates. The prompts are tokenized with the tiny model's tokenizer (ids fit in
the 8B vocabulary) and an image processor at Qwen3-VL's real pixel limits, so a screenshot becomes
as many vision tokens as on the real model.

Reported: each update's wall time (median of --updates after one warm-up), the DPO step's, peak GPU
memory (allocated and reserved) beside the memory plan's prediction (`halo_trainer.learner.memory.plan`, the
check the trainer runs at a run's start), and model FLOP utilisation (MFU): model FLOPs over time
over the card's bf16 dense peak (its datasheet figure, and the matmul rate measured here). FLOPs
are counted, not estimated: torch's FlopCounterMode runs one micro-batch's forward, F, scaled by the
micro-batches. A LoRA update does the forward (F) and the backward through the frozen weights to
the activations (about F): model FLOPs = 2F, plus F for the KL reference pass; gradient
checkpointing recomputes the forward once more (hardware FLOPs, HFU).

``--full-weights vision`` (any ``full_weights`` entries, ``halo_model.full_weights``) also trains
those base-model modules in full: their weight gradients are not in the count, so MFU and HFU are
then lower bounds.

    python bench/gpu_learner_8b.py                      # on a GPU box (CUDA): the 8B dimensions
    python bench/gpu_learner_8b.py --full-weights vision  # ... training the vision tower in full too
    python bench/gpu_learner_8b.py --dry-run            # anywhere: the resolved configuration and the plan
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

from bench_learner import ACTIONS  # noqa: E402

from halo.actions import format_tool_call  # noqa: E402
from halo.schemas import RunSpec  # noqa: E402
from halo.settings.trainer import TrainerSettings  # noqa: E402
from halo_model.tiny import TinyModelParams, qwen3vl_config  # noqa: E402
from halo_trainer.config import RunConfig, load_defaults, profile_for, resolve  # noqa: E402
from halo_trainer.learner.memory import dims as memory_dims  # noqa: E402
from halo_trainer.learner.memory import fit as memory_fit  # noqa: E402
from halo_trainer.learner.memory import parts as memory_parts  # noqa: E402
from halo_trainer.learner.memory import plan as memory_plan  # noqa: E402

# Qwen3-VL-8B-Instruct's sizes are declared once, in the memory plan (its config.json and
# preprocessor_config.json: at these pixel limits a 1280x720 screenshot keeps its full resolution);
# `tiny` is the project's tiny model, so the script itself is checked on machines without a GPU.
_8B = memory_dims.QWEN3_VL_8B
DIMS: dict[str, TinyModelParams] = {
    "8b": TinyModelParams(
        **{
            name: getattr(_8B, name)
            for name in (
                "vocab_size",
                "hidden_size",
                "intermediate_size",
                "num_hidden_layers",
                "num_attention_heads",
                "num_key_value_heads",
                "head_dim",
                "vision_depth",
                "vision_hidden_size",
                "vision_heads",
                "vision_intermediate_size",
                "num_position_embeddings",
            )
        },
        mrope_section=(24, 20, 20),
        max_position_embeddings=262144,
        deepstack_visual_indexes=(8, 16, 24),
        max_pixels=memory_dims.QWEN3_VL_8B_MAX_PIXELS,
        min_pixels=memory_dims.QWEN3_VL_8B_MIN_PIXELS,
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


# Dense bf16 tensor-core peaks from the datasheets (no sparsity), TFLOP/s: the MFU denominator.
BF16_PEAK_TFLOPS = {
    "H100 80GB HBM3": 989.0,
    "H100 SXM": 989.0,
    "H100 PCIe": 756.0,
    "H100 NVL": 835.0,
    "H200": 989.0,
    "A100": 312.0,
}


def bf16_peak(name: str) -> float | None:
    return next((v for k, v in BF16_PEAK_TFLOPS.items() if k in name), None)


def configured(args: argparse.Namespace) -> tuple[TrainerSettings, RunConfig, object]:
    """The trainer's own configuration path: the gpu target's settings, rl_config.yaml's values."""
    cuda = args.device.startswith("cuda") or args.dry_run  # a dry run shows what CUDA would run
    # The CPU check of the script cannot run bfloat16 at speed: float32 there, the target's dtype on CUDA.
    settings = TrainerSettings(target="gpu", device=args.device, dtype=None if cuda else "float32")
    spec = (
        RunSpec(domain="omnizon", full_weights=list(args.full_weights))
        if args.full_weights
        else RunSpec(domain="omnizon")
    )
    cfg = resolve(spec, "bench", ["bench"], load_defaults(ROOT / "configs" / "rl_config.yaml"), profile_for("gpu"))
    learner_cfg = cfg.learner_config(settings.resolved_learner())
    if args.micro_batch:
        learner_cfg = learner_cfg.model_copy(update={"micro_batch_size": args.micro_batch})
    return settings, cfg, learner_cfg


def plan_for(args, settings, cfg, learner_cfg, processor=None) -> memory_fit.MemoryPlan:
    dims = memory_dims.QWEN3_VL_8B if args.dims == "8b" else None
    if dims is None:
        from halo_model.tiny import build_tiny_model

        dims = memory_dims.ModelDims.from_pretrained(build_tiny_model())
    work = memory_plan.workload_for(cfg, learner_cfg, settings.resolved_dtype(), processor)
    if args.device.startswith("cuda") and not args.dry_run:
        card = memory_plan.card_from_device(args.device, shares_card=False)  # the bench has the card alone
    else:
        card = memory_fit.Card(
            total_gib=args.card_gib, policy_shares_card=False, gpu_memory_utilization=0.9, policy_card_gib=None
        )
    return memory_fit.plan(dims, work, card)


def job_samples(tokenizer, steps: int, candidates: int, completion_tokens: int):
    """A step-group job: ``steps`` screenshot prompts (history growing to 8 actions), ``candidates``
    completions each, every completion ``completion_tokens`` long (reasoning text, then a tool call)."""
    import dataclasses

    from bench_learner import group_samples

    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    filler = tokenizer.encode(" The page shows the inbox; the compose button is at the top left, so I click it.")
    records, groups = [], []
    for step in range(steps):
        history = [format_tool_call(ACTIONS[i % len(ACTIONS)]) for i in range(min(step + 1, 8))]
        group = []
        for i, record in enumerate(group_samples(tokenizer, candidates)):
            call = tokenizer.encode(format_tool_call(ACTIONS[(i + step) % len(ACTIONS)])) + [end]
            thought = (filler * (completion_tokens // len(filler) + 1))[: completion_tokens - len(call)]
            group.append(len(records))
            records.append(dataclasses.replace(record, history=history, completion_token_ids=thought + call))
        groups.append(group)
    return records, groups


def forward_flops(learner, batch, micro: int) -> int:
    """One micro-batch's forward, counted."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        learner.logprobs(batch.select(list(range(min(micro, len(batch)))), learner.merge_size))
    return counter.get_total_flops()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", choices=sorted(DIMS), default="8b")
    parser.add_argument("--updates", type=int, default=2, help="timed updates (after one warm-up)")
    parser.add_argument(
        "--steps", type=int, default=None, help="steps of the job (default: rl_config max_steps; tiny: 1)"
    )
    parser.add_argument(
        "--group", type=int, default=None, help="candidates per step (default: rl_config num_generations)"
    )
    parser.add_argument("--micro-batch", type=int, default=None, help="override the resolved micro-batch size")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--full-weights",
        nargs="*",
        default=[],
        help="also train these base-model modules in full: vision_merger, vision_last_blocks, vision, all, or names",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="resolve the configuration, print the plan; no model, no CUDA"
    )
    parser.add_argument("--card-gib", type=float, default=memory_plan.CARDS_GIB["h100-80gb"], help="the dry run's card")
    parser.add_argument(
        "--out", type=Path, default=None, help="default: bench/results/gpu_learner_<dims>[_<full weights>].json"
    )
    args = parser.parse_args()
    if args.dims == "8b" and not args.device.startswith("cuda") and not args.dry_run:
        parser.error(
            "the 8B dimensions need a CUDA GPU (--dry-run prints the configuration; --dims tiny runs on the CPU)"
        )
    settings, cfg, learner_cfg = configured(args)
    steps = args.steps or (cfg.max_steps if args.dims == "8b" else 1)
    group = args.group or cfg.num_generations
    summary = {
        "dims": args.dims,
        "dtype": settings.resolved_dtype(),
        "gradient_checkpointing": learner_cfg.gradient_checkpointing,
        "micro_batch": learner_cfg.micro_batch_size,
        "kl_coef": learner_cfg.kl_coef,
        "clip_eps": [learner_cfg.clip_eps_low, learner_cfg.clip_eps_high],
        "tis_cap": getattr(learner_cfg, "tis_cap", None),
        "temperature": cfg.temperature,
        "lora_r": learner_cfg.lora_r,
        "steps": steps,
        "group": group,
        "completion_tokens": cfg.sampling.max_tokens,
    }
    if args.dry_run:
        plan = plan_for(args, settings, cfg, learner_cfg)
        sys.stdout.write(json.dumps(summary) + "\n" + plan.table() + "\n")
        return
    run(args, settings, cfg, learner_cfg, summary, steps, group)


def run(args, settings, cfg, learner_cfg, summary: dict, steps: int, group: int) -> None:

    from halo_model.inputs import build_batch
    from halo_model.loading import load_processor
    from halo_model.tiny import build_tiny_model
    from halo_trainer.learner.dpo_update import dpo_update
    from halo_trainer.learner.learner import Learner
    from halo_trainer.learner.learner_batch import LearnerBatch

    cuda = args.device.startswith("cuda")
    params = DIMS[args.dims]
    dtype = getattr(torch, settings.resolved_dtype())
    size = {"shortest_edge": params.min_pixels, "longest_edge": params.max_pixels}
    processor = load_processor(build_tiny_model(), size=size)
    tokenizer = processor.tokenizer
    records, groups = job_samples(tokenizer, steps, group, cfg.sampling.max_tokens)
    inputs = build_batch(processor, records, history_limit=cfg.sampling.history_limit)
    rewards = torch.tensor([float(i % 3 == 0) for i in range(len(records))])
    for members in groups:  # advantages within each step's group: A = r - mean(r) (Dr. GRPO)
        rewards[members] -= rewards[members].mean().clone()
    batch = LearnerBatch(inputs=inputs, advantages=rewards)
    plan = plan_for(args, settings, cfg, learner_cfg, processor)

    t0 = time.perf_counter()
    model = random_model(params, tokenizer, dtype, args.device)
    build_s = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    # As halo_trainer.api.runs builds it: the grouped path, at the run's temperature (learner_cfg.temperature).
    try:
        learner = Learner(model, learner_cfg)
    except ValueError as exc:  # a --full-weights entry the model does not have
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    micro = learner_cfg.micro_batch_size
    flops = forward_flops(learner, batch, micro) * len(records) / min(micro, len(records))

    if cuda:
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
    peak = (torch.cuda.max_memory_allocated() / 2**30, torch.cuda.max_memory_reserved() / 2**30) if cuda else None

    # DPO: the first half of each group's candidates preferred to the second half, at the same prompt.
    half = group // 2
    chosen_rows = [g[i] for g in groups for i in range(half)]
    rejected_rows = [g[i + half] for g in groups for i in range(half)]
    chosen, rejected = batch.select(chosen_rows, learner.merge_size), batch.select(rejected_rows, learner.merge_size)
    ref_w, ref_l = learner.logprobs(chosen), learner.logprobs(rejected)
    sync(args.device)
    start = time.perf_counter()
    dpo_update(learner, chosen, rejected, ref_w, ref_l, beta=0.1)
    sync(args.device)
    dpo_s = time.perf_counter() - start
    dpo_peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None

    rate = matmul_tflops(dtype, args.device, 8192 if cuda else 1024, 20)
    device = torch.cuda.get_device_name() if cuda else platform.processor() or "cpu"
    datasheet = bf16_peak(device) if cuda else None
    passes = 2 + (1 if learner_cfg.kl_coef > 0 else 0)  # forward + backward to the activations (+ reference)
    hardware = passes + (1 if learner_cfg.gradient_checkpointing else 0)
    results = {
        **summary,
        "device": device,
        "torch": torch.__version__,
        "params": n_params,
        "lora_params": sum(p.numel() for p in learner.lora_params),
        "full_weights": list(args.full_weights),
        "full_weight_params": sum(p.numel() for p in learner.full_params),
        "rows": len(records),
        "sequence_tokens": int(inputs.input_ids.shape[1]),
        "image_tokens": int((inputs.mm_token_type_ids[0] == 1).sum()),
        "completion_tokens": int(inputs.completion_mask.sum()),
        "model_build_s": build_s,
        "update_s_median": step_s,
        "update_s_all": times,
        "dpo_pairs": len(chosen_rows),
        "dpo_step_s": dpo_s,
        "peak_memory_gib": peak[0] if peak else None,
        "peak_reserved_gib": peak[1] if peak else None,
        "dpo_peak_memory_gib": dpo_peak,
        "plan_learner_gib": plan.peak_gib,
        # What max_memory_allocated can see: the plan less the CUDA context and the allocator's margin.
        "plan_allocated_gib": plan.peak_gib - memory_parts.CUDA_CONTEXT_GIB - plan.items[-1][1],
        "forward_tflop": flops / 1e12,
        "model_tflop_per_update": passes * flops / 1e12,
        "matmul_tflops_measured": rate,
        "bf16_peak_tflops_datasheet": datasheet,
        "mfu": passes * flops / step_s / 1e12 / rate,
        "hfu": hardware * flops / step_s / 1e12 / rate,
        "mfu_datasheet": passes * flops / step_s / 1e12 / datasheet if datasheet else None,
    }
    suffix = "".join(f"_{name}" for name in args.full_weights)
    out = args.out or ROOT / "bench" / "results" / f"gpu_learner_{args.dims}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    memory = (
        f"{peak[0]:.1f} GiB peak allocated ({peak[1]:.1f} reserved; plan {results['plan_allocated_gib']:.1f} "
        f"allocated, {plan.peak_gib:.1f} with context and margin)"
        if peak
        else "CPU (no GPU memory figure)"
    )
    print(
        f"Qwen3-VL {args.dims} ({n_params / 1e6:,.1f} M params, LoRA {results['lora_params'] / 1e6:.2f} M, "
        f"full weights {results['full_weight_params'] / 1e6:.2f} M), job of {steps} steps x {group} candidates "
        f"= {len(records)} rows x {results['sequence_tokens']} tokens ({results['image_tokens']} image) on "
        f"{device}: update {step_s:.2f} s, DPO step ({len(chosen_rows)} pairs) {dpo_s:.2f} s, {memory}, "
        f"MFU {results['mfu']:.1%} (HFU {results['hfu']:.1%}) of a measured {rate:.3g} TFLOP/s; written to {out}"
    )


if __name__ == "__main__":
    main()
