"""Full-weight sync: what a full-weights run pushes into vLLM per version, and how long it takes.

Measured, on the embedded default (vLLM's CPU build serving the tiny Qwen3-VL, float32): for each
``full_weights`` preset, a learner that trains it writes a version's folder
(``Learner.weights.save_base_weights``: the whole base model, as vLLM's in-place reload reads it) and
``PolicyClient.publish_weights`` serves it with a new adapter (pause and drain, ``reload_weights``,
adapter load, older adapters unloaded, resume), ``--reps`` versions each; then one n=8 request on
the new version. Sizes: the trained parameters' bytes, and the folder's.

Computed, not measured: the same for Qwen3-VL-8B-Instruct, its parameter counts from the 8B
config ``bench/gpu_learner_8b.py`` builds (on the meta device: no memory, no download), in bfloat16,
at stated bandwidths for the way a GPU box would sync: vLLM's weight-transfer API sends only the
trained tensors (NCCL over NVLink or PCIe when the trainer has its own GPU, CUDA IPC when they share
one), where the CPU target's reload re-reads the whole model folder from disk.

    .venv/bin/python bench/bench_weight_sync.py [--reps 5] [--port PORT]

Writes bench/results/weight_sync.json and prints a summary. The machine's cores are shared with
whatever else runs: compare on an idle machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_policy import _screenshot, _server  # noqa: E402

from bench.measure import ms_stats  # noqa: E402
from halo.policy_client import PolicyClient  # noqa: E402

PRESETS = ("vision_merger", "vision", "all")
BF16 = 2  # bytes per parameter on the GPU target
# Bandwidths used for the computed 8B figures, GB/s (1e9 bytes): nominal link rates, so the times
# are lower bounds; vLLM's weight transfer adds per-tensor overhead on top.
BANDWIDTH_GBPS = {
    "cuda_ipc_same_gpu_hbm3": 1500.0,  # device-to-device copy on one H100 (about half of 3.35 TB/s HBM3)
    "nccl_nvlink4": 450.0,  # H100 NVLink 4, one direction
    "nccl_pcie5_x16": 50.0,  # PCIe 5.0 x16, effective
    "disk_reload_nvme": 3.0,  # the CPU target's method: write the folder, vLLM re-reads it
}


def _json_default(x: Any) -> Any:
    return round(x, 6) if isinstance(x, float) else x


def eight_b_counts() -> dict[str, Any]:
    """Parameter counts per preset for Qwen3-VL-8B, from ``gpu_learner_8b``'s config, on the meta device."""
    import torch
    from gpu_learner_8b import DIMS
    from transformers import Qwen3VLForConditionalGeneration

    from halo_model import full_weights
    from halo_model.loading import load_processor
    from halo_model.tiny import build_tiny_model, qwen3vl_config

    params = DIMS["8b"]
    tokenizer = load_processor(build_tiny_model()).tokenizer
    config = qwen3vl_config(params, tokenizer, vocab_size=params.vocab_size)
    with torch.device("meta"):
        model = Qwen3VLForConditionalGeneration(config)
    numel = {full_weights.checkpoint_name(n): p.numel() for n, p in model.named_parameters()}
    total = sum(numel.values())
    out: dict[str, Any] = {"total_params": total, "total_bytes_bf16": total * BF16, "presets": {}}
    for preset in PRESETS:
        names = full_weights.select([preset], list(numel), params.vision_depth)
        n = sum(numel[k] for k in names)
        bytes_ = n * BF16
        out["presets"][preset] = {
            "params": n,
            "bytes_bf16": bytes_,
            # the native transfer sends the trained tensors; the disk reload re-reads the whole folder
            "computed_s": {
                link: round((bytes_ if link != "disk_reload_nvme" else total * BF16) / (gbps * 1e9), 4)
                for link, gbps in BANDWIDTH_GBPS.items()
            },
        }
    return out


async def measure_tiny(settings, model_dir: Path, reps: int, work: Path) -> dict[str, Any]:
    import torch

    from halo.settings.trainer import LearnerConfig
    from halo_model.loading import load_model
    from halo_model.weight_sync import folder_bytes
    from halo_trainer.learner.learner import Learner

    png = await _screenshot()
    out: dict[str, Any] = {}
    async with PolicyClient.from_settings(settings, max_tokens=48) as client:
        await client.wait_ready()
        if not await client.weight_reload_available():
            raise SystemExit("the policy server has no weight reload (start it with HALO_POLICY_WEIGHT_RELOAD=true)")
        for preset in PRESETS:
            learner = Learner(
                load_model(model_dir),
                LearnerConfig(lora_r=8, lora_alpha=16.0, max_tokens=48, full_weights=(preset,)),
            )
            trained = dict(zip(learner.weights.full_weight_names(), learner.full_params, strict=True))
            save_ms, totals, steps = [], [], {"pause_s": [], "reload_s": [], "adapter_s": []}
            for v in range(1, reps + 1):
                with torch.no_grad():  # a new version: the trained tensors move
                    for p in trained.values():
                        p.add_(torch.randn_like(p) * 1e-3)
                folder = work / preset / f"v{v}"
                started = time.perf_counter()
                learner.weights.save_adapter(folder / "adapter")
                learner.weights.save_base_weights(folder / "weights")
                save_ms.append((time.perf_counter() - started) * 1000)
                timing = await client.publish_weights(
                    f"sync-{preset}-v{v}", str(folder / "adapter"), str(folder / "weights")
                )
                totals.append(timing["total_s"] * 1000)
                for k in steps:
                    steps[k].append(timing[k] * 1000)
            started = time.perf_counter()
            result = await client.sample_actions(png, "Click Compose", n=8, seed=1)
            first_ms = (time.perf_counter() - started) * 1000
            assert result.model == f"sync-{preset}-v{reps}"
            out[preset] = {
                "trained_params": sum(p.numel() for p in trained.values()),
                "trained_bytes": sum(p.numel() * p.element_size() for p in trained.values()),
                "folder_bytes": folder_bytes(work / preset / f"v{reps}" / "weights"),
                "save_folder": ms_stats(save_ms),
                "publish_weights_total": ms_stats(totals),
                **{f"publish_{k.removesuffix('_s')}": ms_stats(v) for k, v in steps.items()},
                "first_n8_request_after_ms": round(first_ms, 1),
            }
        await client.reload_weights(str(model_dir))  # leave the server as it started
        for preset in PRESETS:
            await client.unload_adapter(f"sync-{preset}-v{reps}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="versions published per preset")
    parser.add_argument("--port", type=int, default=None, help="use a policy server already running here")
    args = parser.parse_args()

    from halo_model.tiny import build_tiny_model

    model_dir = build_tiny_model()
    with tempfile.TemporaryDirectory(prefix="bench-weight-sync-") as tmp, _server(args.port, model_dir) as settings:
        tiny = asyncio.run(measure_tiny(settings, model_dir, args.reps, Path(tmp)))
    results = {
        "tiny_cpu_measured": tiny,
        "qwen3vl_8b_computed": eight_b_counts(),
        "bandwidth_gbps_assumed": BANDWIDTH_GBPS,
        "setup": {
            "target": "cpu",
            "model": "tiny Qwen3-VL (halo_model.tiny, seed 0), float32",
            "method_measured": "save_base_weights + PolicyClient.publish_weights (pause, reload_weights, adapter)",
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    }
    import json

    path = ROOT / "bench" / "results" / "weight_sync.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=_json_default) + "\n")
    print(f"weight sync bench ({results['setup']['cpus']} cpus, load avg {results['setup']['load_average_at_end']}):")
    for preset, r in tiny.items():
        print(
            f"  tiny {preset:>13}: {r['trained_params']:,} trained params ({r['trained_bytes'] / 1e6:.2f} MB), "
            f"folder {r['folder_bytes'] / 1e6:.2f} MB; save {r['save_folder']['median_ms']:.0f} ms, "
            f"publish {r['publish_weights_total']['median_ms']:.0f} ms (reload {r['publish_reload']['median_ms']:.0f} ms)"
        )
    for preset, r in results["qwen3vl_8b_computed"]["presets"].items():
        times = ", ".join(f"{k} {v:.3g} s" for k, v in r["computed_s"].items())
        print(
            f"  8B {preset:>13} (computed): {r['params'] / 1e9:.3f} B params, {r['bytes_bf16'] / 1e9:.2f} GB bf16; {times}"
        )
    print(f"  wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
