"""The run's episode records (``<run>/episodes.jsonl``): what the viewer's filmstrips and step
groups show, and what the trackers' episode images are drawn from.

One line per episode: its steps in order, and at each step every candidate of the step group
(one for plain episodes) with the screenshot it acted on, the screenshot its action led to
(``next_screenshot``: for a fork not continued, the only one kept), its action, the model's raw answer
(cut to ``RAW_CHARS``), the parse error, the reward breakdown, the milestones that fired, its
advantage in its group, the policy version that acted, and whether the episode continued from it.
Screenshots are hashes in the ScreenshotStore. Every evaluation episode is recorded; training
jobs one in ``record_episodes_every`` (0: none), so a long run's file stays bounded.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from halo.schemas import RolloutResult, Transition
from halo.screenshots import ScreenshotStore
from halo_trainer.observe.filmstrip import MAX_FRAMES, draw_action, strip

RAW_CHARS = 2000

# Each group's advantages as the run's loop computes them (``halo_trainer.learner.batching.advantages_of``):
# the log shows the loop's numbers, and the viewer's process never needs torch to write or read them.
Advantages = Callable[[Sequence[Sequence[Transition]]], list[list[float]]]


def _invalid(t: Transition) -> str:
    return f"<invalid: {t.parse_error.reason.value}>" if t.parse_error else "<invalid>"


def _candidate(t: Transition, advantage: float, kept: bool) -> dict[str, Any]:
    return {
        "transition_id": t.transition_id,
        "action": t.action.arguments() if t.action else None,
        "action_text": t.action.short() if t.action else _invalid(t),
        "raw": t.completion_text[:RAW_CHARS],
        "parse_error": t.parse_error.model_dump(mode="json") if t.parse_error else None,
        "reward": t.reward.model_dump(mode="json"),
        "milestones": t.reward.milestones,
        "advantage": advantage,
        "policy_version": t.policy_version,
        "kept": kept,
        "task_success": t.task_success,
        "next_screenshot": t.next_screenshot_sha256,
    }


def episode_records(result: RolloutResult, update: int, advantages: Advantages) -> list[dict[str, Any]]:
    """The records of a job's episodes (none for a job that failed on infrastructure)."""
    groups: dict[str, list[Transition]] = defaultdict(list)
    for t in result.transitions:
        groups[t.group_id].append(t)
    adv = {
        t.transition_id: a
        for members, values in zip(groups.values(), advantages(list(groups.values())), strict=True)
        for t, a in zip(members, values, strict=True)
    }
    records = []
    for ep in result.episodes:
        by_step: dict[int, list[Transition]] = defaultdict(list)
        for t in result.transitions:
            if t.episode_id == ep.episode_id:
                by_step[t.step].append(t)
        steps = []
        for k in sorted(by_step):
            # The branch continued is the candidate whose action the episode's path records.
            taken = ep.actions[k] if k < len(ep.actions) else None
            kept_id = next(
                (t.transition_id for t in by_step[k] if (t.action.short() if t.action else _invalid(t)) == taken),
                None,
            )
            steps.append(
                {
                    "step": k,
                    "screenshot": by_step[k][0].prompt.screenshot_sha256,
                    "group_id": by_step[k][0].group_id,
                    "candidates": [_candidate(t, adv[t.transition_id], t.transition_id == kept_id) for t in by_step[k]],
                }
            )
        records.append(
            {
                "episode_id": ep.episode_id,
                "job_id": ep.job_id,
                "group_id": ep.group_id,
                "task_id": ep.task_id,
                "purpose": ep.purpose,
                "update": update,
                "policy_version": ep.policy_version,
                "success": ep.success,
                "episode_return": ep.episode_return,
                "infra_error": ep.infra_error,
                "screenshots": ep.screenshots,
                "steps": steps,
            }
        )
    return records


class EpisodeLog:
    def __init__(self, path: Path, every: int, advantages: Advantages) -> None:
        self.path, self.every, self.advantages = Path(path), every, advantages
        self.train_seen = 0

    def write(self, result: RolloutResult, update: int) -> list[dict[str, Any]]:
        """Record ``result``'s episodes when its purpose and the sampling rate say so; return what was written."""
        if result.infra_error:
            return []
        if result.purpose == "train":
            self.train_seen += 1
            if not self.every or (self.train_seen - 1) % self.every:
                return []
        records = episode_records(result, update, self.advantages)
        with self.path.open("a") as fh:
            for record in records:
                fh.write(json.dumps(record) + "\n")
        return records


def read_episodes(path: Path) -> list[dict[str, Any]]:
    """The run's episode records, the last of each id (a result replayed after a restart is written again)."""
    if not path.exists():
        return []
    records: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            records[record["episode_id"]] = record
    return list(records.values())


def episode_image(record: dict[str, Any], store: ScreenshotStore) -> Image.Image | None:
    """The episode's first steps as one filmstrip: each screenshot with the action continued from it."""
    frames = []
    for step in record["steps"][:MAX_FRAMES]:
        kept = next((c for c in step["candidates"] if c["kept"]), step["candidates"][0])
        try:
            png = store.get(step["screenshot"])
        except FileNotFoundError:
            continue
        frames.append(draw_action(png, kept["action"], kept["action_text"]))
    return strip(frames) if frames else None
