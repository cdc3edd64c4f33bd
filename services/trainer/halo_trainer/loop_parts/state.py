"""The counters a run's checkpoint restores beside the weights, shared by the parts of a loop."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Counters:
    """Everything besides the weights that a checkpoint must restore."""

    updates: int = 0
    version: int = 0
    episodes_done: int = 0
    jobs_published: int = 0
    eval_rounds: int = 0
    infra_failed_jobs: int = 0  # replaced by new jobs, never counted as episodes
    jobs_timed_out: int = 0  # no result after JOB_TIMEOUT_S (dead-lettered): replaced
    inflight: dict[str, float] = field(default_factory=dict)  # job id -> time published
    pending_entries: list[str] = field(default_factory=list)  # results used since the last checkpoint
    pending_jobs: list[str] = field(default_factory=list)
    # task -> moving mean |advantage| (grpo.task_schedule): only GRPO runs fill it. Kept here, not in
    # grpo/, because a checkpoint saves Counters whole: runs saved before load as they were.
    task_signal: dict[str, float] = field(default_factory=dict)

    def restore(self, saved: dict[str, Any]) -> None:
        """Take a checkpoint's values in place: every part holds this one object."""
        for key, value in asdict(Counters(**saved)).items():
            setattr(self, key, value)
