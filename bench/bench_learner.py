"""Learner throughput on the CPU: one GRPO update of a group of 8 completions, and a checkpoint.

Uses the project's tiny Qwen3-VL (built offline by halo_model.tiny, cached), a 1280x720
screenshot prompt rebuilt by halo_model.inputs.build_batch exactly as for training, and eight
computer-use answers (real tool-call text, tokenized by the model's tokenizer) as the completions.
Times (wall and CPU): input building, an update without and with the KL term (extra reference pass), a checkpoint
save, and load + restore. Other work on the machine skews the figures; the load average is recorded.

    .venv/bin/python bench/bench_learner.py [--updates 5] [--group 8] [--threads 1]

Writes bench/results/learner.json and prints a summary.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from halo.actions import format_tool_call  # noqa: E402
from halo.schemas.actions import Action  # noqa: E402
from halo.settings.trainer import LearnerConfig  # noqa: E402
from halo_model.inputs import SampleRecord, build_batch  # noqa: E402
from halo_model.loading import load_model, load_processor  # noqa: E402
from halo_model.tiny import build_tiny_model  # noqa: E402
from halo_trainer.learner.checkpoint import CheckpointManager  # noqa: E402
from halo_trainer.learner.learner import Learner  # noqa: E402
from halo_trainer.learner.learner_batch import LearnerBatch  # noqa: E402

ACTIONS = [
    Action(action="left_click", coordinate=(512, 348)),
    Action(action="left_click", coordinate=(90, 17)),
    Action(action="type", text="Meeting notes for Friday"),
    Action(action="left_click", element_id="compose"),
    Action(action="scroll", pixels=-300),
    Action(action="key", keys=["Enter"]),
    Action(action="double_click", coordinate=(275, 640)),
    Action(action="terminate", status="success"),
]


def screenshot() -> bytes:
    image = Image.new("RGB", (1280, 720), "white")
    draw = ImageDraw.Draw(image)
    for i in range(12):
        draw.rectangle((40 + 100 * i, 80, 120 + 100 * i, 140 + 30 * (i % 4)), fill=(20 * i, 120, 255 - 20 * i))
        draw.text((40 + 100 * i, 200), f"Item {i}", fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def group_samples(tokenizer, group: int) -> list[SampleRecord]:
    """A group as the trainer scores it: one screenshot prompt, ``group`` computer-use answers."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    png = screenshot()
    return [
        SampleRecord(
            goal="Send an email to alice@example.com with the subject 'Quarterly report'.",
            history=["left_click(coordinate=[300, 180])"],
            screenshots=[png],
            completion_token_ids=tokenizer.encode(format_tool_call(ACTIONS[i % len(ACTIONS)])) + [end],
        )
        for i in range(group)
    ]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(fn, repeat: int, cpu: list[float] | None = None) -> list[float]:
    """Wall seconds per call; per-call CPU seconds (robust to other load on the machine) go to ``cpu``."""
    times = []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), cpu_seconds()
        fn()
        times.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(cpu_seconds() - start_cpu)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=5, help="timed updates per setting (after one warm-up)")
    parser.add_argument("--group", type=int, default=8, help="completions per update")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model_dir = build_tiny_model()
    processor = load_processor(model_dir)
    samples = group_samples(processor.tokenizer, args.group)
    build_s = timed(lambda: build_batch(processor, samples), 3)
    inputs = build_batch(processor, samples)
    rewards = torch.tensor([float(i % 3 == 0) for i in range(args.group)])
    advantages = rewards - rewards.mean()
    batch = LearnerBatch(inputs=inputs, advantages=advantages)
    completion_tokens = int(inputs.completion_mask.sum())
    max_completion = int(inputs.completion_mask.sum(-1).max())

    results: dict[str, object] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "model": str(model_dir.name),
        "group": args.group,
        "prompt_tokens": inputs.prompt_lengths[0],
        "image_tokens": int((inputs.mm_token_type_ids[0] == 1).sum()),
        "completion_tokens": completion_tokens,
        "build_batch_s_median": statistics.median(build_s),
    }
    for name, kl in (("update_kl0", 0.0), ("update_kl0.04", 0.04)):
        config = LearnerConfig(
            learning_rate=1e-4, lora_r=8, lora_alpha=16, kl_coef=kl, max_tokens=max(64, max_completion)
        )
        learner = Learner(load_model(model_dir), config)
        learner.update(batch)  # warm-up
        cpu: list[float] = []
        times = timed(lambda learner=learner: learner.update(batch), args.updates, cpu)
        results[name] = {
            "s_median": statistics.median(times),
            "cpu_s_median": statistics.median(cpu),
            "s_min": min(times),
            "completion_tokens_per_s": completion_tokens / statistics.median(times),
            "lora_params": sum(p.numel() for p in learner.params),
        }

    with tempfile.TemporaryDirectory() as tmp:
        manager = CheckpointManager(tmp, keep=2)
        save_s = timed(lambda: manager.save(learner, config=config.model_dump(mode="json"), extra={"offset": "1-0"}), 3)
        checkpoint = manager.load_latest()
        assert checkpoint is not None
        size = sum(p.stat().st_size for p in checkpoint.path.rglob("*") if p.is_file())
        fresh = Learner(load_model(model_dir), config)
        restore_s = timed(lambda: manager.restore(fresh, manager.load_latest()), 3)
    results["checkpoint"] = {
        "save_s_median": statistics.median(save_s),
        "load_and_restore_s_median": statistics.median(restore_s),
        "bytes": size,
    }
    results["load_average"] = os.getloadavg()

    out = ROOT / "bench" / "results" / "learner.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(
        f"tiny Qwen3-VL, group of {args.group}: prompt {results['prompt_tokens']} tokens ({results['image_tokens']} image), {completion_tokens} completion tokens"
    )
    print(f"  build_batch (processor + checks): {results['build_batch_s_median'] * 1000:.0f} ms")
    for name in ("update_kl0", "update_kl0.04"):
        r = results[name]
        print(
            f"  {name}: {r['s_median'] * 1000:.0f} ms wall, {r['cpu_s_median'] * 1000:.0f} ms CPU (medians; "
            f"{r['completion_tokens_per_s']:.0f} completion tokens/s)"
        )
    c = results["checkpoint"]
    print(
        f"  checkpoint save {c['save_s_median'] * 1000:.0f} ms, load+restore {c['load_and_restore_s_median'] * 1000:.0f} ms, {c['bytes'] / 1e6:.2f} MB"
    )
    print(f"  load average {results['load_average']}; written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
