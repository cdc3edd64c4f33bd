"""A run's success per task, as the run viewer serves it (``GET /ui/api/runs/{run_id}/tasks``).

A run over many tasks averages them: one task that learned beside eleven that did not moves the
run's held-out success by a twelfth. These rows keep the tasks apart: held-out success at the
first and the latest evaluation that played the task, and the training samples' success over the
task's first and last few updates, each with its counts and 95% Wilson interval.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from halo.schemas.base import Message

Count = Annotated[int, Field(ge=0)]
PAIRS = (("episodes", "successes"), ("samples", "sample_successes"))  # (trials, successes) a count may hold
TaskCounts = dict[str, dict[str, int]]


def count(value: Any) -> int | None:
    """``value`` where it is a count (an int >= 0, not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def well_formed_counts(tasks: Any) -> TaskCounts | None:
    """A log line's ``tasks`` (eval.jsonl, train_tasks.jsonl) with each task's well-formed pairs
    only (both counts present, successes <= trials); a task without a usable ``episodes`` pair is
    left out. None when ``tasks`` is not a mapping (a line written before per-task counts).

    The viewer's per-task table and ``halo train``'s summary read the logs through this one check,
    so they never disagree on which counts are usable."""
    if not isinstance(tasks, dict):
        return None
    out: TaskCounts = {}
    for task, counts in tasks.items():
        if not isinstance(counts, dict):
            continue
        kept = {}
        for trials, hits in PAIRS:
            n, k = count(counts.get(trials)), count(counts.get(hits))
            if n is not None and k is not None and k <= n:
                kept |= {trials: n, hits: k}
        if "episodes" in kept:
            out[str(task)] = kept
    return out


class SuccessCount(Message):
    """``successes`` of ``trials``; the rate and its 95% Wilson interval are None when nothing was tried."""

    successes: Count
    trials: Count
    rate: float | None
    ci_low: float | None
    ci_high: float | None


class HeldOut(SuccessCount):
    """The task's greedy episodes in one evaluation (eval.jsonl's ``tasks``)."""

    update: Count  # the evaluation after this many updates (0: the starting policy)


class TrainWindow(Message):
    """The task's training results over a few consecutive updates that sampled it."""

    first_update: Count
    last_update: Count
    updates: Count  # how many updates of the window sampled the task
    # Sampled actions that completed the task, every candidate of a step group counted (GRPO's
    # rollout/sample_success_rate per task); None for an MCTS run, whose searches keep no samples.
    samples: SuccessCount | None
    # Judged training episodes and their successes (GRPO); an MCTS run's searches and those that
    # found the task's success.
    episodes: SuccessCount


Direction = Literal["up", "down"]


class TaskSuccess(Message):
    task_id: str
    first_eval: HeldOut | None  # None: no evaluation with per-task counts played the task yet
    latest_eval: HeldOut | None
    train_first: TrainWindow | None  # None: no update sampled the task yet
    train_last: TrainWindow | None  # None: fewer than two updates sampled it (the windows never overlap)
    # A change the counts support: the first and last 95% intervals do not overlap, held-out or in
    # training (the training samples' first, else its episodes'); None where every pair overlaps.
    held_out_moved: Direction | None
    train_moved: Direction | None
    # The largest absolute change of a rate, first to last (held-out, training samples or episodes):
    # what the rows are sorted by, after those that moved.
    change: float


class RunTaskSuccess(Message):
    run_id: str
    algorithm: str | None
    window: Count  # the most updates in a training window (the request's ``window``)
    evaluations: Count  # eval.jsonl lines with per-task counts
    train_updates: Count  # updates with per-task training counts (train_tasks.jsonl)
    tasks: list[TaskSuccess]  # those that moved first, then by ``change``, largest first
