"""Which transitions a GRPO update learns from: grouped by ``group_id``, stale and broken ones dropped."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from halo.schemas import GroupMode, Transition


@dataclass
class Selection:
    """The transitions an update learns from, and what was dropped on the way (counted in metrics)."""

    groups: list[list[Transition]] = field(default_factory=list)
    dropped_stale: int = 0
    dropped_infra: int = 0
    dropped_singleton: int = 0


def select_groups(
    transitions: Sequence[Transition], current_version: int, max_staleness: int, mode: GroupMode
) -> Selection:
    """Group by ``group_id``; drop infra-error and stale transitions, and groups left with one member
    (one candidate, or one episode): with no baseline to compare with, their advantage is 0."""
    out = Selection()
    by_group: dict[str, list[Transition]] = defaultdict(list)
    for t in transitions:
        if t.infra_error:
            out.dropped_infra += 1
        elif current_version - t.policy_version > max_staleness:
            out.dropped_stale += 1
        else:
            by_group[t.group_id].append(t)
    for members in by_group.values():
        size = len(members) if mode is GroupMode.STEP else len({t.episode_id for t in members})
        if size < 2:
            out.dropped_singleton += len(members)
            continue
        out.groups.append(members)
    return out
