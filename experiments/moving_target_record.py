"""What a moving-target run (``local.playground-2``: the button in one of 4 layouts) did, per layout,
read from its run folder: the held-out greedy evaluations, the sampled hits per layout, how
often the 4 groups of one update drew the same candidates (``common_random_numbers``), and how
far the sampled pointer clicks landed from the shown layout's button against the other layouts'
buttons (a policy that reads the screen clicks nearer its own layout's button; a blind one is as
near to all four).

A layout is the job's task seed modulo 4 (the Playground's ``slots[seed % len(slots)]``); a train
job's seed is ``100003 * run seed + job index`` (``halo_trainer.loop_parts.jobs``), an evaluation
slot's is 1000000 + slot. Nothing here trains; it reads ``config.json``, ``eval.jsonl`` and
``episodes.jsonl`` (written for every training job when ``record_episodes_every`` is 1).

    .venv/bin/python experiments/moving_target_record.py var/runs/<run_a> var/runs/<run_b> \\
        --block 40 --last-evals 5 --out notebook/data/pg2_crn.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from halo.actions import LEFT_CLICKS, to_pixels
from halo.schemas.env import Viewport
from halo_sites.tasks import get_task
from halo_trainer.config import EVAL_SEED_OFFSET
from halo_trainer.observe.metrics import wilson_interval
from halo_trainer.observe.viewer.folders import whole_records

LAYOUTS = 4
TASK = "local.playground-2"


# Per block of updates, the mean of these metrics.jsonl values (a name a run never logged is left out).
BLOCK_METRICS = ("train/entropy", "train/kl", "train/seed_contrasted_fraction")


def _button_centres() -> list[tuple[float, float]]:
    return [tuple(xy) for xy in get_task(TASK).config["slots"]]


def _distances(action: dict, layout: int, centres: list[tuple[float, float]]) -> tuple[float, float, bool] | None:
    """A pointer click's pixel distance to the shown layout's button, its mean distance to the
    other layouts' buttons, and whether the shown layout's button is the nearest of the four (a
    quarter of a blind policy's clicks); None for any other action."""
    if action.get("action") not in LEFT_CLICKS or action.get("coordinate") is None:
        return None
    x, y = to_pixels(tuple(action["coordinate"]), Viewport())
    d = [((x - cx) ** 2 + (y - cy) ** 2) ** 0.5 for cx, cy in centres]
    others = [d[i] for i in range(len(d)) if i != layout]
    return d[layout], sum(others) / len(others), d[layout] < min(others)


def _span(b: int, block: int) -> str:
    """Block ``b``'s label: its first and last update."""
    return f"{b * block}-{b * block + block - 1}"


def _interval(k: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(k, n) if n else (0.0, 1.0)
    return {"successes": k, "n": n, "rate": k / n if n else None, "wilson95": [round(low, 3), round(high, 3)]}


def record(run_dir: Path, block: int, last_evals: int) -> dict[str, Any]:
    cfg = json.loads((run_dir / "config.json").read_text())["run"]
    evals = whole_records(run_dir / "eval.jsonl")
    hits: dict[int, list[int]] = defaultdict(lambda: [0] * LAYOUTS)
    samples: dict[int, list[int]] = defaultdict(lambda: [0] * LAYOUTS)
    groups: dict[int, list[list[str]]] = defaultdict(list)
    greedy: dict[int, list[int]] = defaultdict(lambda: [0] * LAYOUTS)  # update -> successes per layout
    answers: dict[int, list[str | None]] = defaultdict(lambda: [None] * LAYOUTS)  # update -> first greedy action
    clicks: dict[int, list[tuple[float, float, bool]]] = defaultdict(list)  # block -> _distances
    centres = _button_centres()
    for ep in whole_records(run_dir / "episodes.jsonl"):
        if ep["purpose"] == "eval":
            parts = ep["job_id"].split("-")  # <run>-eval<round>-<slot>[-r<attempt>]
            slot = int(parts[-2] if parts[-1].startswith("r") else parts[-1])
            shown = (EVAL_SEED_OFFSET + slot) % LAYOUTS
            greedy[ep["update"]][shown] += int(ep["success"])
            if ep["steps"] and ep["steps"][0]["candidates"]:
                answers[ep["update"]][shown] = ep["steps"][0]["candidates"][0]["action_text"]
            continue
        index = int(ep["job_id"].rsplit("-j", 1)[1])
        layout = (cfg["seed"] * 100_003 + index) % LAYOUTS
        first = ep["steps"][0]["candidates"]
        b = ep["update"] // block
        samples[b][layout] += len(first)
        hits[b][layout] += sum(bool(c.get("task_success")) for c in first)
        clicks[b] += [d for c in first if (d := _distances(c.get("action") or {}, layout, centres))]
        groups[ep["update"]].append([c["action_text"] for c in first])
    paired: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for update, cands in groups.items():
        if len(cands) < 2:
            continue
        width = min(len(c) for c in cands)
        paired[update // block][0] += sum(len({c[i] for c in cands}) == 1 for i in range(width))
        paired[update // block][1] += width
    means: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for line in whole_records(run_dir / "metrics.jsonl"):
        b = max(int(line["update"]) - 1, 0) // block  # a line's update counts the updates done, itself included
        for name in BLOCK_METRICS:
            if isinstance(line.get(name), int | float) and math.isfinite(line[name]):  # NaN: a skipped step
                means[b][name].append(float(line[name]))
    pooled = evals[-last_evals:]
    k = sum(round(e["eval/success_rate"] * e["eval/episodes"]) for e in pooled)
    n = sum(int(e["eval/episodes"]) for e in pooled)
    return {
        "run_id": cfg["run_id"],
        "seed": cfg["seed"],
        "learning_rate": cfg["learning_rate"],
        "common_random_numbers": cfg.get("common_random_numbers", False),
        "kl_coef": cfg.get("kl_coef", 0.0),
        "seed_contrast": cfg.get("seed_contrast", 0.0),
        "updates": max(groups) + 1 if groups else 0,
        "minutes": round((evals[-1]["time"] - evals[0]["time"]) / 60, 1) if evals else 0.0,
        "evaluations": [
            {
                "update": e["update"],
                "successes": round(e["eval/success_rate"] * e["eval/episodes"]),
                "episodes": int(e["eval/episodes"]),
                "per_layout": greedy.get(e["update"]),
                "answers": answers.get(e["update"]),
            }
            for e in evals
        ],
        f"greedy_last_{last_evals}_evaluations": _interval(k, n),
        "blocks_of_updates": block,
        "sampled_hits_per_layout": {_span(b, block): {"hits": hits[b], "samples": samples[b]} for b in sorted(samples)},
        "identical_candidates_across_groups": {
            _span(b, block): {"identical": v[0], "of": v[1]} for b, v in sorted(paired.items())
        },
        "train_metric_means": {
            _span(b, block): {n: round(sum(v) / len(v), 4) for n, v in sorted(means[b].items())} for b in sorted(means)
        },
        "pointer_click_distance_px": {
            _span(b, block): _click_summary(clicks[b], sum(samples[b])) for b in sorted(samples)
        },
    }


def _click_summary(distances: list[tuple[float, float, bool]], samples: int) -> dict[str, Any]:
    n = len(distances)
    return {
        "pointer_clicks": n,
        "of": samples,
        "to_own_button": round(sum(d[0] for d in distances) / n, 1) if n else None,
        "to_other_buttons": round(sum(d[1] for d in distances) / n, 1) if n else None,
        "nearest_is_own_button": sum(d[2] for d in distances),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders (var/runs/<run_id>)")
    p.add_argument("--block", type=int, default=40, help="updates per row of the per-layout counts")
    p.add_argument("--last-evals", type=int, default=5, help="evaluations pooled for the final interval")
    p.add_argument("--out", type=Path, help="write the records here as JSON (default: print)")
    args = p.parse_args(argv)
    missing = [str(r) for r in args.runs if not (r / "config.json").is_file()]
    if missing:
        print(f"not a run folder (no config.json): {', '.join(missing)}", file=sys.stderr)
        return 2
    records = [record(r, args.block, args.last_evals) for r in args.runs]
    text = json.dumps(records, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
        print(f"wrote {args.out} ({len(records)} runs)")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
