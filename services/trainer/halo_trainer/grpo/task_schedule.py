"""Which task each training job of a GRPO run plays (the ``task_sampling`` knob).

``round_robin`` gives every task the same share of the jobs. On a domain where the policy gets
reward variance on few tasks, most of those jobs teach nothing: a group whose candidates all earn
the same reward has zero advantage everywhere. On the embedded default's 12 Playground tasks the
one a blind policy can learn, the fixed click, needs 3-6 updates' worth of groups of its own; in
turn it gets one job in 12, and in none of four round-robin runs did it reach 3/3 held-out by
update 20 (notebook/2026-11-27-newcomer-task-sampling.md).

``signal`` draws each job's task in proportion to what the task's groups recently gave the
learner, the mean |advantage| of their candidates (before any ``seed_contrast``), followed with an
exponential moving average over updates. ``FLOOR`` of the draws is spread evenly, so a task whose
groups were all flat is still tried and can come back once the policy reaches it; a task with no
groups yet counts as the best seen, so every task is tried early. A learned task's groups agree
again and its share falls back toward the floor: the jobs move to where the learning is. Measured
costs: a task whose rewards vary for a reason the policy cannot learn keeps drawing jobs, and a
learned task no longer pulls, so others can undo it (a learning-progress weighting would answer
the first; not built).

The draw for job ``index`` depends only on the run's seed, the index and the averages, and the
averages live in the loop's checkpointed ``Counters``: after a crash the same job index maps to
the same task, so the pipeline's replayed jobs keep their ids.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence

from halo.schemas import TaskSampling, Transition
from halo_trainer.config import RunConfig

FLOOR = 0.25  # share of the draws spread evenly over the tasks
DECAY = 0.5  # weight of the newest update in a task's moving average


def task_weights(tasks: Sequence[str], signal: Mapping[str, float]) -> list[float]:
    """Each task's probability of being drawn: ``FLOOR`` evenly, the rest in proportion to its signal."""
    seen = [signal[t] for t in tasks if t in signal]
    best = max(seen, default=0.0)
    raw = [signal.get(t, best) for t in tasks]
    total = sum(raw)
    if total <= 0.0:
        return [1.0 / len(tasks)] * len(tasks)
    return [FLOOR / len(tasks) + (1.0 - FLOOR) * r / total for r in raw]


def task_of_job(cfg: RunConfig, index: int, signal: Mapping[str, float]) -> str:
    """The task training job ``index`` plays."""
    if cfg.task_sampling is TaskSampling.ROUND_ROBIN or len(cfg.tasks) == 1:
        return cfg.tasks[index % len(cfg.tasks)]
    draw = random.Random(f"{cfg.seed}:{index}")  # a string seed is hashed the same way in every process
    return draw.choices(cfg.tasks, weights=task_weights(cfg.tasks, signal))[0]


def update_signal(
    signal: Mapping[str, float], groups: Sequence[Sequence[Transition]], adv: Sequence[Sequence[float]]
) -> dict[str, float]:
    """The moving averages after one update: each task's mean |advantage| over its groups' candidates."""
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for members, values in zip(groups, adv, strict=True):
        for t, a in zip(members, values, strict=True):
            sums[t.task_id] += abs(a)
            counts[t.task_id] += 1
    out = dict(signal)
    for task, total in sums.items():
        now = total / counts[task]
        out[task] = now if task not in out else (1.0 - DECAY) * out[task] + DECAY * now
    return out
