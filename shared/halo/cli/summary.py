"""The few lines ``halo train`` ends with: what the run learned, how fast, where its adapter and curves are.

Everything comes from what the trainer's API already serves: the run's status (``GET /runs/{id}``)
and its evaluations, the lines of the run folder's ``eval.jsonl`` (``GET /ui/api/runs/{id}/metrics``),
which carry each evaluation's 95% Wilson interval as the run loop computed it. Nothing here imports
the trainer: the CLI runs where torch is not installed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from halo.schemas import RunState, RunStatus
from halo.schemas.task_success import well_formed_counts


def viewer_link(base_url: str, run_id: str) -> str:
    """The run's page in the run viewer the trainer serves at ``/ui``."""
    return f"{base_url.rstrip('/')}/ui/#/run/{run_id}"


def _number(line: Mapping[str, Any], key: str) -> float | None:
    value = line.get(key)
    # bool is an int to Python but never a measurement; null/NaN mean "not measured".
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _evaluation(line: Mapping[str, Any]) -> str:
    """``0.44 [0.23, 0.67] (7/16, v8)``: the rate, its interval, successes of episodes, the policy version."""
    rate = _number(line, "eval/success_rate")
    if rate is None:
        return "not measured"
    text = f"{rate:.2f}"
    low, high = _number(line, "eval/ci_low"), _number(line, "eval/ci_high")
    if low is not None and high is not None:
        text += f" [{low:.2f}, {high:.2f}]"
    details = []
    if (n := _number(line, "eval/episodes")) is not None and n > 0:
        details.append(f"{round(rate * n)}/{round(n)}")
    if (version := _number(line, "eval/policy_version")) is not None:
        details.append(f"v{round(version)}")
    elif (update := _number(line, "update")) is not None:
        details.append(f"update {round(update)}")
    return f"{text} ({', '.join(details)})" if details else text


def _label(line: Mapping[str, Any]) -> str:
    if (version := _number(line, "eval/policy_version")) is not None:
        return f"v{round(version)}"
    return f"update {round(_number(line, 'update') or 0)}"


def _task_counts(checked: Mapping[str, Mapping[str, int]], task: str) -> tuple[int, int]:
    """(successes, episodes) of ``task`` in one evaluation's checked counts (``well_formed_counts``);
    (0, 0) where it has no usable counts."""
    counts = checked.get(task)
    return (counts["successes"], counts["episodes"]) if counts else (0, 0)


def task_moves(evaluations: Sequence[Mapping[str, Any]], shown: int = 5) -> list[str]:
    """The tasks whose held-out greedy successes rose above the first evaluation's at some
    evaluation: first -> best (where it came before the last) -> last, from each line's ``tasks``
    counts (the viewer's "Success per task" table). A several-task run's overall rate can hide the
    one task that learned; this names it.
    """
    lines = [line for line in evaluations if isinstance(line.get("tasks"), Mapping)]
    if len(lines) < 2:
        return []
    tasks = dict.fromkeys(t for line in lines for t in line["tasks"])
    checked = [well_formed_counts(line["tasks"]) or {} for line in lines]  # once per line, not per task
    moved = []
    for task in tasks:
        counts = [_task_counts(line_counts, task) for line_counts in checked]
        best = max(range(len(lines)), key=lambda i: (counts[i][0] / counts[i][1] if counts[i][1] else -1.0, -i))
        first = counts[0][0] / counts[0][1] if counts[0][1] else 0.0
        if counts[best][1] and counts[best][0] / counts[best][1] > first:
            parts = [f"{counts[0][0]}/{counts[0][1]} ({_label(lines[0])})"]
            if best != len(lines) - 1:  # the best came before the end: say so, then where it ended
                parts.append(f"best {counts[best][0]}/{counts[best][1]} ({_label(lines[best])})")
            parts.append(f"{counts[-1][0]}/{counts[-1][1]} ({_label(lines[-1])})")
            moved.append(f"{task}  " + " -> ".join(parts))
    return moved[:shown] + (
        [f"and {len(moved) - shown} more (the viewer's Success per task)"] if len(moved) > shown else []
    )


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def run_summary(status: RunStatus, evaluations: Sequence[Mapping[str, Any]], viewer: str) -> str:
    """The end of ``halo train``: held-out success before -> after (95% Wilson intervals), updates,
    episodes and their rate over the wall time, where the adapter is, and the viewer link.

    ``evaluations``: the run's eval.jsonl lines in order; the first is the baseline taken before any
    update, the last the final policy's. ``viewer``: the run's page (``viewer_link``).
    """
    measured = [line for line in evaluations if _number(line, "eval/success_rate") is not None]
    if not measured:
        success = "not measured (no evaluation ran; eval_every 0 turns them off)"
    elif len(measured) == 1:
        success = f"{_evaluation(measured[0])}, the only evaluation"
    else:
        success = f"{_evaluation(measured[0])}  ->  {_evaluation(measured[-1])}"

    wall = max(0.0, status.updated_at - status.created_at)
    rate = f"{status.episodes_done / wall:.2f}/s" if wall > 0 else "n/a"

    if status.policy_version > 0:
        adapter = f"v{status.policy_version} (latest): adapters/v{status.policy_version} in the run folder"
        if status.adapter_name and status.state in (RunState.FINISHED, RunState.STOPPED, RunState.FAILED):
            # A run's end unloads its adapters from vLLM (docs/trainer.md): the name is history now.
            adapter += f"; served as {status.adapter_name} until the run ended (`halo modes promote` serves it again)"
        elif status.adapter_name:
            adapter += f", served as {status.adapter_name}"
    else:
        adapter = "none yet: no update was published (v0 is the base model)"

    moves = task_moves(measured)
    if len(measured) >= 2 and any("tasks" in line for line in measured):
        per_task = moves or ["none: no task's held-out successes rose above its first evaluation's"]
    else:
        per_task = []
    rows = [
        ("held-out success", f"{success}   (95% Wilson intervals)" if measured else success),
        *(("tasks that moved" if i == 0 else "", text) for i, text in enumerate(per_task)),
        ("updates", str(status.updates)),
        ("episodes", f"{status.episodes_done} in {_duration(wall)} wall time ({rate})"),
        ("run folder", status.run_dir or "unknown"),
        ("adapter", adapter),
        ("viewer", viewer),
    ]
    width = max(len(label) for label, _ in rows)
    head = f"run {status.run_id} {status.state.value}"
    return "\n".join([head, *(f"  {label:<{width}}  {value}" for label, value in rows)])
