"""Success counted per task, so a run over many tasks shows which of them moved.

Two records in the run folder, both read by the viewer's per-task table (``viewer/task_success.py``):
- ``eval.jsonl``: each evaluation's line carries ``tasks``, ``{task_id: {"episodes": n, "successes": k}}``
  over its greedy episodes (summed, they are the line's ``eval/episodes`` and its successes);
- ``train_tasks.jsonl``: one line per update, ``{"update": u, "time": t, "tasks": {task_id: counts}}``,
  the counts of the results that update learned from. GRPO: judged episodes and their successes
  (``rollout/success_rate``'s) and the sampled actions and those that completed the task
  (``rollout/sample_success_rate``'s); MCTS: searches as episodes, a search that found the
  task's success as a success. A line written again for the same update (results replayed after a
  restart) replaces the earlier one.

Per-task counts stay out of ``metrics.jsonl``: its values are one number per name, sent to every
tracker and kept in the run's status, and a domain's task list would multiply its names.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from halo.schemas import EpisodeSummary, RolloutResult

TaskCounts = dict[str, dict[str, int]]


def count_by_task(outcomes: Iterable[tuple[str, bool | None]]) -> TaskCounts:
    """``(task_id, success)`` pairs as ``{task_id: {"episodes": n, "successes": k}}``; None counts as a failure."""
    counts: TaskCounts = {}
    for task, success in outcomes:
        c = counts.setdefault(task, {"episodes": 0, "successes": 0})
        c["episodes"] += 1
        c["successes"] += success is True
    return dict(sorted(counts.items()))


def eval_task_counts(episodes: Sequence[EpisodeSummary]) -> TaskCounts:
    """An evaluation's greedy episodes per task, counted as ``eval/success_rate`` counts them."""
    return count_by_task((e.task_id, e.success) for e in episodes)


def train_task_counts(results: Sequence[RolloutResult]) -> TaskCounts:
    """A GRPO update's results per task, counted as ``rollout_metrics`` counts them run-wide."""
    counts = count_by_task((e.task_id, e.success) for r in results for e in r.episodes if e.success is not None)
    sampled = count_by_task((t.task_id, t.task_success) for r in results for t in r.transitions if not t.infra_error)
    for task, c in sampled.items():
        counts.setdefault(task, {"episodes": 0, "successes": 0}).update(
            samples=c["episodes"], sample_successes=c["successes"]
        )
    return dict(sorted(counts.items()))


class TrainTaskLog:
    """``<run>/train_tasks.jsonl``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def write(self, update: int, counts: TaskCounts) -> None:
        if not counts:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps({"update": update, "time": time.time(), "tasks": counts}) + "\n")
