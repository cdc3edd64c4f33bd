"""Pixels once per screenshot: a step group's learner batch with each screenshot held once against the
layout in which every row carried its own copy, and the figure for one update at the 8B's sizes.

At tiny dims (the project's tiny Qwen3-VL, bench_learner's 1280x720 screenshot prompt, a step group
of ``--group`` candidates built by ``halo_model.inputs.build_batch`` as for training), before and
after in one run, the old layout materialised from the new one (``halo_model.inputs.unshared``):

* the batch's pixel bytes;
* its pickled size: the learner ranks' broadcast (``ranks.Channel.tell``) pickles the batch object;
* the log-probs of the two layouts, per-row path and grouped pass: max abs difference (float32).

At the 8B's sizes, computed (``halo_trainer.learner.memory``): one screenshot's patches at the
default viewport and its float32 bytes, and one update's pixels on the host for a step-group run at
the GPU defaults (jobs_per_update x max_steps states, num_generations candidates each).

    .venv/bin/python bench/bench_batch_pixels.py [--group 8]

Writes bench/results/batch_pixels.json and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_learner import group_samples  # noqa: E402

from halo.schemas.knobs import knob  # noqa: E402
from halo_model.grouped import grouped_logprobs  # noqa: E402
from halo_model.inputs import build_batch, unshared  # noqa: E402
from halo_model.loading import load_model, load_processor  # noqa: E402
from halo_model.logprobs import completion_logprobs  # noqa: E402
from halo_model.tiny import build_tiny_model  # noqa: E402
from halo_trainer.learner.learner_batch import LearnerBatch  # noqa: E402
from halo_trainer.learner.memory.dims import GIB, QWEN3_VL_8B  # noqa: E402
from halo_trainer.learner.memory.parts import (  # noqa: E402
    Workload,
    screenshot_patches,
    screenshot_pixel_bytes,
    update_pixel_bytes,
)

OUT = ROOT / "bench" / "results" / "batch_pixels.json"


def layout(batch: LearnerBatch) -> dict:
    """What a batch holds of pixels, and what the broadcast sends (``broadcast_object_list`` pickles)."""
    inputs = batch.inputs
    return {
        "images_held": len(inputs.image_grid_thw),
        "image_slots": len(inputs.image_index),
        "pixel_bytes": inputs.pixel_values.nbytes,
        "pickled_bytes": len(pickle.dumps(batch)),
    }


def tiny(group: int) -> dict:
    model_dir = build_tiny_model()
    processor = load_processor(model_dir)
    inputs = build_batch(processor, group_samples(processor.tokenizer, group))
    after = LearnerBatch(inputs=inputs, advantages=torch.zeros(group))
    before = LearnerBatch(inputs=unshared(inputs), advantages=torch.zeros(group))
    model = load_model(model_dir, dtype="float32")
    diff = {
        name: float((fn(model, after.inputs) - fn(model, before.inputs)).abs().max())
        for name, fn in (("per_row", completion_logprobs), ("grouped", grouped_logprobs))
    }
    return {
        "group": group,
        "patches_per_screenshot": int(inputs.image_grid_thw[0].prod()),
        "patch_width": int(inputs.pixel_values.shape[1]),
        "before": layout(before),
        "after": layout(after),
        "logprob_max_abs_diff": diff,
    }


def at_8b() -> dict:
    """One update's pixels on the host at the 8B's sizes and the GPU defaults (configs/rl_config.yaml)."""
    jobs, steps, n = (knob(k).default for k in ("jobs_per_update", "max_steps", "num_generations"))
    work = Workload()  # the default viewport, 1280x720, and the 8B's image budget
    states = jobs * steps  # a step group per step of each job, at the most
    once = update_pixel_bytes(QWEN3_VL_8B, work, states)
    return {
        "viewport": list(work.viewport),
        "patches_per_screenshot": screenshot_patches(QWEN3_VL_8B, work),
        "screenshot_bytes": screenshot_pixel_bytes(QWEN3_VL_8B, work),
        "jobs_per_update": jobs,
        "max_steps": steps,
        "num_generations": n,
        "rows": states * n,
        "screenshots": states,
        "before_gib": round(once * n / GIB, 3),
        "after_gib": round(once / GIB, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", type=int, default=8, help="candidates of the step group (rows sharing a screenshot)")
    args = parser.parse_args()
    result = {"tiny": tiny(args.group), "qwen3_vl_8b_update": at_8b()}
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    t, b = result["tiny"], result["qwen3_vl_8b_update"]
    mib = 2**20
    print(
        f"tiny, a step group of {t['group']} ({t['patches_per_screenshot']} patches x {t['patch_width']}): "
        f"pixels {t['before']['pixel_bytes'] / mib:.2f} -> {t['after']['pixel_bytes'] / mib:.2f} MiB, "
        f"pickled {t['before']['pickled_bytes'] / mib:.2f} -> {t['after']['pickled_bytes'] / mib:.2f} MiB; "
        f"log-prob max abs diff {t['logprob_max_abs_diff']}"
    )
    print(
        f"8B, one update ({b['rows']} rows, {b['screenshots']} screenshots of {b['patches_per_screenshot']} "
        f"patches, {b['screenshot_bytes'] / 1e6:.1f} MB each): {b['before_gib']} -> {b['after_gib']} GiB of pixels"
    )
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
