"""One prompt pass per group against the per-row path: a learner update on a group of 8 completions.

The batch is bench_learner's: one 1280x720 screenshot prompt (tiny Qwen3-VL, rebuilt by
halo_model.inputs.build_batch as for training) and eight distinct computer-use answers. The same
learner settings run on both log-prob paths, ``Learner(logprob_fn=completion_logprobs)`` (per row)
and the default ``grouped_logprobs`` (halo_model.grouped), and the two are measured alternately in
one process so that their ratio is not skewed by load that changes between them:

* update time: wall and CPU seconds (medians; CPU time is the steadier on a shared machine), and
  the no-grad scoring of the batch (``Learner.logprobs``: the reference pass, DPO's reference);
* memory, two ways: (a) the activations autograd saves for the backward of one update (bytes of
  the distinct tensor storages it packs, parameters left out): the part of a GPU's memory that
  grows with the batch, deterministic; (b) the peak RSS growth of one update in a fresh process
  per path (Linux's ``VmHWM`` high-water mark, reset through ``/proc/self/clear_refs`` after
  the setup, minus ``VmRSS`` before the update; a fresh process so that one path's freed memory
  is not reused by the other);
* tokens through the decoder and bytes of inputs moved to the device per update;
* the two paths' agreement on this batch: max abs difference of the log-probs, max difference of
  the LoRA gradients relative to each parameter's largest entry.

    .venv/bin/python bench/bench_grouped_prompt.py [--updates 5] [--group 8] [--threads 1]

Writes bench/results/grouped_prompt.json and prints a summary.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_learner import cpu_seconds, group_samples  # noqa: E402

from halo.settings.trainer import LearnerConfig  # noqa: E402
from halo_model.grouped import grouped_logprobs, pack  # noqa: E402
from halo_model.inputs import build_batch  # noqa: E402
from halo_model.loading import load_model, load_processor  # noqa: E402
from halo_model.logprobs import completion_logprobs  # noqa: E402
from halo_model.tiny import build_tiny_model  # noqa: E402
from halo_trainer.learner import Learner, LearnerBatch  # noqa: E402

PATHS = {"per_row": completion_logprobs, "grouped": grouped_logprobs}


def setup(group: int) -> tuple[Path, LearnerBatch, LearnerConfig]:
    model_dir = build_tiny_model()
    processor = load_processor(model_dir)
    inputs = build_batch(processor, group_samples(processor.tokenizer, group))
    rewards = torch.tensor([float(i % 3 == 0) for i in range(group)])
    batch = LearnerBatch(inputs=inputs, advantages=rewards - rewards.mean())
    max_completion = int(inputs.completion_mask.sum(-1).max())
    config = LearnerConfig(
        learning_rate=1e-4,
        lora_r=8,
        lora_alpha=16,
        micro_batch_size=group,
        max_completion_tokens=max(64, max_completion),
    )
    return model_dir, batch, config


def learner(model_dir: Path, config: LearnerConfig, path: str) -> Learner:
    torch.manual_seed(0)
    return Learner(load_model(model_dir), config, logprob_fn=PATHS[path])


def saved_activation_bytes(learner: Learner, batch: LearnerBatch) -> int:
    """Bytes of the distinct storages autograd saves for the backward during one update."""
    params = {p.untyped_storage().data_ptr() for p in learner.model.parameters()}
    seen: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        learner.update(batch)
    return sum(seen.values())


def nbytes(obj) -> int:
    return sum(getattr(obj, f.name).nbytes for f in fields(obj) if isinstance(getattr(obj, f.name), torch.Tensor))


def agreement(model_dir: Path, config: LearnerConfig, batch: LearnerBatch) -> dict:
    """Log-probs and LoRA gradients of both paths on one learner after one step (LoRA B not 0)."""
    trained = learner(model_dir, config, "grouped")
    trained.update(batch)
    weights = batch.advantages.unsqueeze(-1) * batch.inputs.completion_mask
    out = {}
    for path, fn in PATHS.items():
        trained.model.zero_grad(set_to_none=True)
        logp = fn(trained.model, batch.inputs, grad=True)
        (weights * logp).sum().backward()
        grads = {n: p.grad.clone() for n, p in trained.model.named_parameters() if p.requires_grad}
        out[path] = (logp.detach(), grads)
    (logp_r, grads_r), (logp_g, grads_g) = out["per_row"], out["grouped"]
    relative = max(
        float((grads_g[n] - grads_r[n]).abs().max() / grads_r[n].abs().max().clamp(min=1e-30)) for n in grads_r
    )
    return {"logprob_max_abs_diff": float((logp_g - logp_r).abs().max()), "lora_grad_max_rel_diff": relative}


def memory_kib(field: str) -> int:
    """A ``/proc/self/status`` figure (VmRSS, VmHWM) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)


def child(path: str, group: int) -> None:
    """One update in this (fresh) process; prints the peak RSS growth it caused, in MiB."""
    model_dir, batch, config = setup(group)
    one = learner(model_dir, config, path)
    gc.collect()
    before = memory_kib("VmRSS")
    # The setup (model load, image processing) set a higher mark than an update would: start afresh.
    Path("/proc/self/clear_refs").write_text("5")
    one.update(batch)
    peak = memory_kib("VmHWM")
    print(json.dumps({"peak_rss_growth_mib": (peak - before) / 1024, "rss_before_mib": before / 1024}))


def peak_rss(path: str, group: int, threads: int) -> dict:
    command = [sys.executable, __file__, "--child", path, "--group", str(group), "--threads", str(threads)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def timed(fn) -> tuple[float, float]:
    start, start_cpu = time.perf_counter(), cpu_seconds()
    fn()
    return time.perf_counter() - start, cpu_seconds() - start_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=5, help="timed updates per path (after one warm-up)")
    parser.add_argument("--group", type=int, default=8, help="completions sharing the prompt")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--child", choices=list(PATHS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        child(args.child, args.group)
        return

    model_dir, batch, config = setup(args.group)
    inputs = batch.inputs
    packed = pack(inputs, spatial_merge_size=2)
    learners = {path: learner(model_dir, config, path) for path in PATHS}
    results: dict[str, object] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "model": model_dir.name,
        "group": args.group,
        "prompt_tokens": inputs.prompt_lengths[0],
        "image_tokens": int((inputs.mm_token_type_ids[0] == 1).sum()),
        "completion_tokens": int(inputs.completion_mask.sum()),
        "decoder_tokens": {"per_row": inputs.input_ids.numel(), "grouped": packed.input_ids.numel()},
        "input_bytes_to_device": {"per_row": nbytes(inputs), "grouped": nbytes(packed)},
    }
    results["saved_activation_mib"] = {
        path: saved_activation_bytes(one, batch) / 2**20 for path, one in learners.items()
    }  # also the warm-up update of each
    samples: dict[str, dict[str, list[float]]] = {
        f"{path}_{kind}": {"wall": [], "cpu": []} for path in PATHS for kind in ("update", "score")
    }
    for _ in range(args.updates):
        for path, one in learners.items():
            for kind, fn in (
                ("update", lambda one=one: one.update(batch)),
                ("score", lambda one=one: one.logprobs(batch)),
            ):
                wall, cpu = timed(fn)
                samples[f"{path}_{kind}"]["wall"].append(wall)
                samples[f"{path}_{kind}"]["cpu"].append(cpu)
    for key, s in samples.items():
        results[key] = {"s_median": statistics.median(s["wall"]), "cpu_s_median": statistics.median(s["cpu"])}
    for kind in ("update", "score"):
        per_row, grouped = results[f"per_row_{kind}"], results[f"grouped_{kind}"]
        results[f"{kind}_ratio_grouped_over_per_row"] = {
            "wall": grouped["s_median"] / per_row["s_median"],
            "cpu": grouped["cpu_s_median"] / per_row["cpu_s_median"],
        }
    results["peak_rss"] = {path: peak_rss(path, args.group, args.threads) for path in PATHS}
    results["agreement"] = agreement(model_dir, config, batch)
    results["load_average"] = os.getloadavg()

    out = ROOT / "bench" / "results" / "grouped_prompt.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    report(results, out)


def report(results: dict, out: Path) -> None:
    print(
        f"tiny Qwen3-VL, a group of {results['group']} on one prompt of {results['prompt_tokens']} tokens "
        f"({results['image_tokens']} image), {results['completion_tokens']} completion tokens"
    )
    for kind, label in (("update", "update"), ("score", "no-grad scoring")):
        r, g = results[f"per_row_{kind}"], results[f"grouped_{kind}"]
        ratio = results[f"{kind}_ratio_grouped_over_per_row"]
        print(
            f"  {label}: per row {r['cpu_s_median'] * 1000:.0f} ms CPU ({r['s_median'] * 1000:.0f} wall), grouped "
            f"{g['cpu_s_median'] * 1000:.0f} ms CPU ({g['s_median'] * 1000:.0f} wall): {ratio['cpu']:.2f}x CPU, "
            f"{ratio['wall']:.2f}x wall"
        )
    saved, rss = results["saved_activation_mib"], results["peak_rss"]
    print(f"  activations saved for backward: per row {saved['per_row']:.1f} MiB, grouped {saved['grouped']:.1f} MiB")
    print(
        f"  peak RSS growth of one update: per row {rss['per_row']['peak_rss_growth_mib']:.0f} MiB, grouped "
        f"{rss['grouped']['peak_rss_growth_mib']:.0f} MiB"
    )
    tokens, moved = results["decoder_tokens"], results["input_bytes_to_device"]
    print(
        f"  decoder tokens {tokens['per_row']} -> {tokens['grouped']}; inputs to the device "
        f"{moved['per_row'] / 2**20:.2f} -> {moved['grouped'] / 2**20:.2f} MiB"
    )
    a = results["agreement"]
    print(
        f"  agreement: log-probs {a['logprob_max_abs_diff']:.1e} max abs, LoRA gradients "
        f"{a['lora_grad_max_rel_diff']:.1e} max relative"
    )
    print(f"  load average {results['load_average']}; written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
