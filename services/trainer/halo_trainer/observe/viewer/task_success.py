"""A run's success per task as the viewer's table shows it (``GET /ui/api/runs/{run_id}/tasks``).

Read from the run folder only (``observe.task_counts`` writes both files): the per-task counts of
each evaluation in ``eval.jsonl`` and of each update in ``train_tasks.jsonl``. For each task: the
held-out counts at the first and the latest evaluation that played it (the same held-out seeds
each time: slot ``i`` always plays task ``i mod len(tasks)`` on seed ``EVAL_SEED_OFFSET + i``),
and the training counts over the first and the last ``window`` updates that sampled it, each
with its 95% Wilson interval. A line cut short or of another shape is skipped, never an error:
the files are read while the run appends to them.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from halo.schemas.task_success import (
    Direction,
    HeldOut,
    RunTaskSuccess,
    SuccessCount,
    TaskCounts,
    TaskSuccess,
    TrainWindow,
    count,
    well_formed_counts,
)
from halo_trainer.observe.metrics import wilson_interval
from halo_trainer.observe.viewer.folders import RunFolders, missing, whole_records

DEFAULT_WINDOW = 5  # the lab notebook (notebook/) compares sampled hits over the first 5 updates and the last 5
MAX_WINDOW = 10_000


def _task_counts(line: dict[str, Any]) -> TaskCounts | None:
    """A line's ``tasks`` with each task's well-formed pairs only; None when the line has none
    (an evaluation written before per-task counts, or another shape)."""
    if count(line.get("update")) is None:
        return None
    return well_formed_counts(line.get("tasks")) or None


def evaluations(folder: Path) -> list[tuple[int, TaskCounts]]:
    """eval.jsonl's lines with per-task counts, in the order they were written."""
    return [(line["update"], counts) for line in whole_records(folder / "eval.jsonl") if (counts := _task_counts(line))]


def train_updates(folder: Path) -> list[tuple[int, TaskCounts]]:
    """train_tasks.jsonl by update; a line written again for an update (a replay) replaces the first."""
    by_update = {
        line["update"]: counts for line in whole_records(folder / "train_tasks.jsonl") if (counts := _task_counts(line))
    }
    return sorted(by_update.items())


def success_count(successes: int, trials: int) -> SuccessCount:
    low, high = wilson_interval(successes, trials)
    rate = successes / trials if trials else None
    return SuccessCount(
        successes=successes,
        trials=trials,
        rate=rate,
        ci_low=low if math.isfinite(low) else None,
        ci_high=high if math.isfinite(high) else None,
    )


def held_out(update: int, counts: dict[str, int]) -> HeldOut:
    return HeldOut(update=update, **success_count(counts["successes"], counts["episodes"]).model_dump())


def train_window(updates: list[tuple[int, dict[str, int]]]) -> TrainWindow:
    """The summed counts of consecutive updates that sampled the task (non-empty)."""

    def total(key: str) -> int:
        return sum(c.get(key, 0) for _, c in updates)

    sampled = any("samples" in c for _, c in updates)
    return TrainWindow(
        first_update=updates[0][0],
        last_update=updates[-1][0],
        updates=len(updates),
        samples=success_count(total("sample_successes"), total("samples")) if sampled else None,
        episodes=success_count(total("successes"), total("episodes")),
    )


def direction(first: SuccessCount | None, last: SuccessCount | None) -> Direction | None:
    """``up``/``down`` when the two 95% intervals do not overlap."""
    if first is None or last is None or first.ci_low is None or last.ci_low is None:
        return None
    if last.ci_low > first.ci_high:
        return "up"
    if last.ci_high < first.ci_low:
        return "down"
    return None


def _change(first: SuccessCount | None, last: SuccessCount | None) -> float:
    if first is None or last is None or first.rate is None or last.rate is None:
        return 0.0
    return abs(last.rate - first.rate)


def task_row(
    task: str, evals: list[tuple[int, TaskCounts]], train: list[tuple[int, TaskCounts]], window: int
) -> TaskSuccess:
    played = [held_out(update, counts[task]) for update, counts in evals if task in counts]
    first_eval, latest_eval = (played[0], played[-1]) if played else (None, None)
    sampled = [(update, counts[task]) for update, counts in train if task in counts]
    # Two windows that never share an update: while the task has fewer than 2 * window updates, halves.
    size = min(window, len(sampled) // 2)
    train_first = train_window(sampled[:size] if size else sampled) if sampled else None
    train_last = train_window(sampled[-size:]) if size else None
    pairs = [(first_eval, latest_eval)]
    if train_first and train_last:
        pairs += [(train_first.samples, train_last.samples), (train_first.episodes, train_last.episodes)]
    train_moved = None
    if train_first and train_last:
        use_samples = train_first.samples is not None and train_last.samples is not None
        train_moved = (
            direction(train_first.samples, train_last.samples)
            if use_samples and train_first.samples.trials and train_last.samples.trials
            else direction(train_first.episodes, train_last.episodes)
        )
    return TaskSuccess(
        task_id=task,
        first_eval=first_eval,
        latest_eval=latest_eval,
        train_first=train_first,
        train_last=train_last,
        held_out_moved=direction(first_eval, latest_eval) if played and len(played) > 1 else None,
        train_moved=train_moved,
        change=max(_change(a, b) for a, b in pairs),
    )


def _natural(task: str) -> list[Any]:
    """``local.playground-2`` before ``local.playground-10``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", task)]


def _config_run(folder: Path) -> dict[str, Any]:
    try:
        run = json.loads((folder / "config.json").read_text()).get("run", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return run if isinstance(run, dict) else {}


def run_task_success(folder: Path, window: int = DEFAULT_WINDOW) -> RunTaskSuccess:
    """Every task of the run (its config's, and any its files name): those that moved first, then
    by the largest change of a rate, then by name."""
    run = _config_run(folder)
    evals, train = evaluations(folder), train_updates(folder)
    named = run.get("tasks") if isinstance(run.get("tasks"), list) else []
    tasks = {str(t) for t in named} | {t for _, c in evals + train for t in c}
    rows = [task_row(t, evals, train, window) for t in tasks]
    rows.sort(key=lambda r: (r.held_out_moved is None and r.train_moved is None, -r.change, _natural(r.task_id)))
    algorithm = run.get("algorithm")
    return RunTaskSuccess(
        run_id=folder.name,
        algorithm=algorithm if isinstance(algorithm, str) else None,
        window=window,
        evaluations=len(evals),
        train_updates=len(train),
        tasks=rows,
    )


def task_router(runs: RunFolders) -> APIRouter:
    router = APIRouter(prefix="/ui", tags=["viewer"])

    @router.get("/api/runs/{run_id}/tasks", response_model=RunTaskSuccess)
    async def tasks(
        run_id: str, window: Annotated[int, Query(ge=1, le=MAX_WINDOW)] = DEFAULT_WINDOW
    ) -> Response | RunTaskSuccess:
        """Success per task: held-out at the first and latest evaluation, training over the task's
        first and last ``window`` updates (404: no such run; 422: a window outside 1..10000)."""
        if (folder := runs.folder(run_id)) is None:
            return missing(f"no run {run_id!r} in this viewer's run folders")
        return run_task_success(folder, window)

    return router
