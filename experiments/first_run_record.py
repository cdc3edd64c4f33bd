"""Whether each newcomer's first run showed learning, read from the run folders: at least one task's
held-out greedy successes at the last evaluation above its first evaluation's, and the held-out
mean return at the last evaluation not below the first's. Per run also the tasks that moved, the
fixed click's share of the training jobs, and the most common greedy first action per evaluation
(a collapse onto one action reads as one action at every task).

    .venv/bin/python experiments/first_run_record.py var/runs/first-s* --out notebook/data/first_run_seeds.json

``--keep`` keeps the records already in the ``--out`` file of runs whose folders are not given.

The per-task counts come from ``task_share_record.record`` (the viewer's "Success per task" files);
the mean returns from ``eval.jsonl``, the greedy first actions from ``episodes.jsonl``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from task_share_record import record as task_record

from halo_trainer.observe.viewer.folders import whole_records

FIXED_CLICK = "local.playground-1"


def _greedy_first_actions(run_dir: Path) -> dict[int, list]:
    """Per evaluation's update: the most common greedy first action and how many episodes took it."""
    firsts: dict[int, Counter] = {}
    for episode in whole_records(run_dir / "episodes.jsonl"):
        if episode.get("purpose") != "eval" or not episode.get("steps"):
            continue
        action = episode["steps"][0]["candidates"][0].get("action") or {}
        text = f"{action.get('action')} {action.get('coordinate', '')}".strip()
        firsts.setdefault(episode["update"], Counter())[text] += 1
    return {u: [*c.most_common(1)[0], sum(c.values())] for u, c in sorted(firsts.items())}


def record(run_dir: Path) -> dict:
    tasks = task_record(run_dir, window=10)
    evals = list(whole_records(run_dir / "eval.jsonl"))
    first, last = evals[0], evals[-1]
    moved = {
        task: [per["greedy_per_evaluation"][0], per["greedy_per_evaluation"][-1]]
        for task, per in tasks["tasks"].items()
        if per["greedy_per_evaluation"] and per["greedy_per_evaluation"][-1][1] > per["greedy_per_evaluation"][0][1]
    }
    returns = [round(first["eval/mean_return"], 3), round(last["eval/mean_return"], 3)]
    return {
        "run_id": tasks["run_id"],
        "seed": tasks["seed"],
        "status": tasks["status"],
        "evaluations": [e["update"] for e in evals],
        "held_out_successes": [
            [int(e["eval/success_rate"] * e["eval/episodes"]), int(e["eval/episodes"])] for e in evals
        ],
        "held_out_mean_return": [round(e["eval/mean_return"], 3) for e in evals],
        "tasks_moved": moved,
        "fixed_click_share": tasks["tasks"].get(FIXED_CLICK, {}).get("share"),
        "greedy_first_action": _greedy_first_actions(run_dir),
        "shows_learning": bool(moved) and returns[1] >= returns[0],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="run folders (var/runs/<run_id>)")
    p.add_argument("--out", type=Path, default=None, help="write the records here as JSON (else print)")
    p.add_argument(
        "--keep",
        action="store_true",
        help="keep the records already in --out of runs not given (their folders on another machine)",
    )
    args = p.parse_args()
    rows = [record(r) for r in args.runs]
    if args.keep and args.out and args.out.exists():
        given = {r["run_id"] for r in rows}
        rows += [r for r in json.loads(args.out.read_text())["records"] if r["run_id"] not in given]
    rows.sort(key=lambda r: r["seed"])
    summary = {"runs": len(rows), "show_learning": sum(r["shows_learning"] for r in rows), "records": rows}
    text = json.dumps(summary, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(
        "\n".join(
            f"seed {r['seed']}: {'learns' if r['shows_learning'] else 'no'}  held-out {r['held_out_successes'][0]} -> "
            f"{r['held_out_successes'][-1]}  return {r['held_out_mean_return'][0]} -> {r['held_out_mean_return'][-1]}  "
            f"moved {sorted(r['tasks_moved'])}  fixed click share {r['fixed_click_share']}"
            for r in rows
        )
    )
    print(f"{summary['show_learning']} of {summary['runs']} runs show learning")


if __name__ == "__main__":
    main()
