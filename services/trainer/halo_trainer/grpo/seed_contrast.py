"""Seed contrast (the ``seed_contrast`` knob): out of each advantage, the part its action earned on every seed alike."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence

from halo.schemas import Transition


def contrast_across_seeds(
    groups: Sequence[Sequence[Transition]], adv: Sequence[Sequence[float]], weight: float
) -> tuple[list[list[float]], int]:
    """Take out of each advantage ``weight`` times the part its action earned on every seed alike.

    A step group's advantage mixes two things: how good the action is on any seed of the task, and
    how much better it is on this seed's page. Where the batch played one action (the same text,
    at the same step, after the same history) on two or more seeds of one task, the mean of its
    per-seed advantages is the first part; subtracting it leaves the second. With ``weight`` 1 the
    summed update has no component that moves every seed's policy the same way: on a moving target
    that is the screen-blind step, which otherwise outweighs the screen-dependent one about 100 to
    1 (notebook/). The baseline depends on the action, so the update is the gradient of
    sum_s E[A_s(a) - mean_s' A_s'(a)], not of the return: on this task both peak at reading the
    screen, but a task whose answer is the same on every seed gets no signal where actions
    coincide. Actions played on one seed only keep their advantage. Returns the advantages and how
    many transitions were contrasted.
    """
    keys = [[(t.task_id, t.step, tuple(t.prompt.history), t.completion_text) for t in g] for g in groups]
    return contrast_by_key(keys, adv, weight)


def contrast_by_key(
    keys: Sequence[Sequence[Hashable]], adv: Sequence[Sequence[float]], weight: float
) -> tuple[list[list[float]], int]:
    """``contrast_across_seeds`` over groups whose members are named by ``keys``: one key is one
    action (task, step, history, text); a key in two or more groups is contrasted."""
    per_action: dict[Hashable, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for g, (members, values) in enumerate(zip(keys, adv, strict=True)):
        for key, a in zip(members, values, strict=True):
            per_action[key][g].append(a)
    shared: dict[Hashable, float] = {}
    for key, by_group in per_action.items():
        if len(by_group) > 1:
            shared[key] = sum(sum(v) / len(v) for v in by_group.values()) / len(by_group)
    out = [
        [a - weight * shared.get(key, 0.0) for key, a in zip(members, values, strict=True)]
        for members, values in zip(keys, adv, strict=True)
    ]
    return out, sum(key in shared for members in keys for key in members)
