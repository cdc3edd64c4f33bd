"""Training metrics: per-update JSON lines in the run folder, Prometheus gauges, eval intervals.

Names are namespaced (``rollout/``, ``train/``, ``eval/``, ``policy/``) and every line carries the
update index and the policy version that produced it.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from prometheus_client import Gauge

from halo.schemas import RolloutResult
from halo_trainer.observe.trackers import Trackers


class Selection(Protocol):
    """What ``rollout_metrics`` reads of the groups an update kept (``halo_trainer.grpo.groups``)."""

    @property
    def groups(self) -> Sequence[Sequence[object]]: ...
    @property
    def dropped_stale(self) -> int: ...
    @property
    def dropped_infra(self) -> int: ...
    @property
    def dropped_singleton(self) -> int: ...


TRAINER_METRIC = Gauge("halo_trainer_metric", "Latest value of a training metric", ["run_id", "name"])
logger = logging.getLogger("halo.trainer.metrics")


class GapAlarm:
    """Watches ``train/behaviour_logprob_gap``, the mean |learner - vLLM| log-prob per token.

    With the same weights, prompt, grammar and temperature the two agree to float rounding
    (docs/policy.md, "Log-prob parity"): a gap above ``threshold`` means the learner is not scoring
    the policy that sampled, and the importance weights correct (or truncate) more than rounding.
    Each update over it logs one warning naming the usual causes and is counted in
    ``train/behaviour_gap_alarms`` (since the trainer started the run; ``threshold`` None: off).
    """

    def __init__(self, threshold: float | None, run_id: str) -> None:
        self.threshold, self.run_id = threshold, run_id
        self.count = 0

    def check(self, metrics: dict[str, float]) -> dict[str, float]:
        gap = metrics.get("train/behaviour_logprob_gap")
        if self.threshold is None or gap is None or not math.isfinite(gap):
            return {}
        if gap > self.threshold:
            self.count += 1
            staleness = metrics.get("rollout/staleness", float("nan"))
            logger.warning(
                "run %s: behaviour log-prob gap %.4f nats/token > %.4f (alarm %d): the learner does not score the "
                "policy vLLM sampled from. Likely: a dtype mismatch (HALO_POLICY_DTYPE vs the learner's), sampling "
                "params the learner does not reproduce (temperature, top-k/p, penalties, a generation_config.json "
                "without --generation-config vllm, an unreplayed grammar), or adapter versions (stale rollouts: "
                "mean staleness %.2f versions; an adapter vLLM did not load)",
                self.run_id,
                gap,
                self.threshold,
                self.count,
                staleness,
            )
        return {"train/behaviour_gap_alarms": float(self.count)}


class MetricsLog:
    """metrics.jsonl, and the same lines to the run's experiment trackers (``report_to``) when given."""

    def __init__(self, path: Path, trackers: Trackers | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.trackers = trackers

    def write(self, update: int, version: int, metrics: dict[str, float], run_id: str | None = None) -> None:
        line = {"update": update, "policy_version": version, "time": time.time(), **metrics}
        with self.path.open("a") as fh:
            fh.write(json.dumps(line, allow_nan=True) + "\n")
        if self.trackers is not None:
            self.trackers.log_metrics(update, {"policy_version": version, **metrics})
        rid = run_id or self.path.parent.name
        for name, value in metrics.items():
            if isinstance(value, int | float) and math.isfinite(value):
                TRAINER_METRIC.labels(rid, name).set(value)

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]


def rollout_metrics(results: Sequence[RolloutResult], selection: Selection, version: int) -> dict[str, float]:
    """The seeds' monitoring table: reward level and spread, zero-variance groups, validity, length."""
    transitions = [t for r in results for t in r.transitions if not t.infra_error]
    episodes = [e for r in results for e in r.episodes]
    groups: dict[str, list[float]] = defaultdict(list)
    for t in transitions:
        groups[t.group_id].append(t.reward.total if t.episode_return is None else t.episode_return)
    stds = [statistics.pstdev(v) for v in groups.values() if len(v) > 1]
    judged = [e.success for e in episodes if e.success is not None]
    nan = float("nan")
    return {
        "rollout/mean_reward": statistics.fmean(t.reward.total for t in transitions) if transitions else nan,
        "rollout/reward_std": statistics.fmean(stds) if stds else nan,
        "rollout/frac_reward_zero_std": sum(s == 0 for s in stds) / len(stds) if stds else nan,
        "rollout/action_validity": sum(t.action is not None for t in transitions) / len(transitions)
        if transitions
        else nan,
        "rollout/episode_length": statistics.fmean(e.steps for e in episodes) if episodes else nan,
        "rollout/success_rate": sum(judged) / len(judged) if judged else nan,
        # Every sampled action that completed the task, kept branch or not (in step groups the
        # kept branch is one of N, so this is the finer-grained view of the sampling policy).
        "rollout/sample_success_rate": sum(t.task_success is True for t in transitions) / len(transitions)
        if transitions
        else nan,
        "rollout/mean_return": statistics.fmean(e.episode_return for e in episodes) if episodes else nan,
        "rollout/staleness": statistics.fmean(version - t.policy_version for t in transitions) if transitions else nan,
        "rollout/transitions": float(len(transitions)),
        "rollout/groups": float(len(selection.groups)),
        "rollout/dropped_stale": float(selection.dropped_stale),
        "rollout/dropped_infra": float(selection.dropped_infra + sum(1 for r in results if r.infra_error)),
        "rollout/dropped_singleton": float(selection.dropped_singleton),
        "rollout/job_s": statistics.fmean(r.elapsed_s for r in results) if results else nan,
    }


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a success rate (sensible at 0 and n, unlike the normal one)."""
    if n == 0:
        return float("nan"), float("nan")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0/n and n/n the bound is exactly 0 (1) in exact arithmetic; in floats centre - half can
    # come out 2.8e-17 (0/11), a bar whose lower whisker is negative, which matplotlib refuses.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high
