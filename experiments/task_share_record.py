"""What a several-task run gave each task: its share of the training jobs, its sampled success early
and late, and its held-out greedy success per evaluation, read from the run folders.

    .venv/bin/python experiments/task_share_record.py var/runs/RUN [var/runs/RUN ...] --window 10 \\
        --out notebook/data/newcomer_task_sampling.json

``train_tasks.jsonl`` (one line per update: episodes and successes per task) and ``eval.jsonl``
(one line per evaluation, the same per task) are the files the viewer's "Success per task" table
reads, read the same way: ``whole_records`` (a line cut short by a run still writing is skipped)
and ``well_formed_counts`` (only usable counts). ``--window``: how many updates count as the first
and the last.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from halo.schemas.task_success import well_formed_counts
from halo_trainer.observe.metrics import wilson_interval
from halo_trainer.observe.viewer.folders import whole_records


def _counts(path: Path) -> list[dict]:
    """Each line's update and its usable per-task counts (an empty mapping where it has none)."""
    return [{**r, "tasks": well_formed_counts(r.get("tasks")) or {}} for r in whole_records(path)]


def _pooled(rows: list[dict], task: str) -> dict:
    episodes = sum(r["tasks"].get(task, {}).get("episodes", 0) for r in rows)
    successes = sum(r["tasks"].get(task, {}).get("successes", 0) for r in rows)
    low, high = wilson_interval(successes, episodes) if episodes else (0.0, 1.0)
    return {"successes": successes, "episodes": episodes, "wilson95": [round(low, 3), round(high, 3)]}


def record(run_dir: Path, window: int) -> dict:
    config = json.loads((run_dir / "config.json").read_text())
    run = config.get("run", config)
    train, evals = _counts(run_dir / "train_tasks.jsonl"), _counts(run_dir / "eval.jsonl")
    tasks = list(run["tasks"])
    jobs = {t: sum(r["tasks"].get(t, {}).get("episodes", 0) for r in train) for t in tasks}
    total = sum(jobs.values()) or 1
    per_task = {
        t: {
            "training_episodes": jobs[t],
            "share": round(jobs[t] / total, 3),
            f"sampled_first_{window}_updates": _pooled(train[:window], t),
            f"sampled_last_{window}_updates": _pooled(train[-window:], t),
            "greedy_per_evaluation": [
                [e["update"], e["tasks"].get(t, {}).get("successes", 0), e["tasks"].get(t, {}).get("episodes", 0)]
                for e in evals
            ],
        }
        for t in tasks
    }
    status = json.loads((run_dir / "status.json").read_text())
    return {
        "run_id": run_dir.name,
        "task_sampling": run.get("task_sampling", "round_robin"),
        "seed": run.get("seed"),
        "updates": len(train),
        "training_episodes": total,
        "status": status.get("state"),
        "tasks": per_task,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="run folders (var/runs/<run_id>)")
    p.add_argument("--window", type=int, default=10, help="updates counted as the first and the last")
    p.add_argument("--out", type=Path, default=None, help="write the records here as JSON (else print)")
    args = p.parse_args()
    out = [record(r, args.window) for r in args.runs]
    text = json.dumps(out, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
