"""What `halo train` draws while it follows a run: the run's episodes with an ETA, the phase the run
is in (``RunStatus.phase``: "evaluating v0: 7/32 episodes") with its own ETA, and a line when a
phase takes longer than it should or the trainer says why it waits.

Where stdout is no terminal (``| tee log``, nohup, CI) nothing is drawn: a live display is redrawn
in place with control characters, and rich holds it back until the end. ``PlainLog`` says when to
print one plain line instead: at each phase change and at least every ``PLAIN_EVERY_S`` seconds.

Kept apart from the drawing (``train_commands._follow``) so that the arithmetic is tested on its
own: ``RunProgress.observe`` takes each polled status with the time it was read.

The run's ETA is measured, never assumed: the seconds per update come from the updates this client
watched (collection, learner step, publish, checkpoint), the seconds per evaluation episode from the
evaluations it watched, and the evaluations still to come from the run's ``eval_every`` (the last
update is always evaluated). Until one update has been watched there is no ETA.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field

from halo.schemas import ALGORITHMS, Algorithm, RunPhase, RunState, RunStatus

# The phases an update is made of; an evaluation's time is counted apart (it comes every eval_every).
UPDATE_KINDS = frozenset({"collecting", "updating", "publishing", "checkpointing"})
STALL_S = 60.0  # a phase with no visible progress for this long (and 3x its usual time) is said
# A log followed with `tail -f` hears from the run at least every 15 s: a poll takes up to a second
# more than the wait before it.
PLAIN_EVERY_S = 14.0


def duration(seconds: float | None) -> str:
    """``1h 02m``, ``3m 07s``, ``42s``; ``-`` when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


def phase_line(phase: RunPhase) -> str:
    """One line for a phase seen once (``halo runs list``): "evaluating v3: 7/32 episodes"."""
    count = f": {phase.done}/{phase.total} {phase.unit}".rstrip() if phase.total else ""
    return f"{phase.label}{count}" + (f" ({phase.note})" if phase.note else "")


def scores(run: RunStatus) -> str:
    """The latest update's headline numbers; "no update yet" rather than NaN before the first."""
    m = run.latest_metrics
    if run.updates == 0:
        return "no update yet"

    def num(key: str, fmt: str) -> str:
        value = m.get(key, float("nan"))
        return "-" if value != value else format(value, fmt)

    shown = ALGORITHMS[Algorithm(run.spec.algorithm)].progress
    return " ".join(f"{label} {num(key, fmt)}" for label, key, fmt in shown)


@dataclass
class Plan:
    """What the run's resolved config says about what is left to do (``config.json``); 0 = unknown/none."""

    eval_every: int = 0
    eval_episodes: int = 0


@dataclass
class _Watched:
    """The phase being watched: when this client first saw it and when its count last moved."""

    key: tuple[str, float]
    phase: RunPhase
    seen_at: float
    moved_at: float
    said_slow: bool = False


@dataclass
class RunProgress:
    plan: Plan = field(default_factory=Plan)
    stall_s: float = STALL_S
    seconds_in: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    durations: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    eval_episode_s: list[float] = field(default_factory=list)  # per episode, of whole evaluations watched
    _watched: _Watched | None = None
    _last: tuple[float, str | None] | None = None  # (time, kind) of the previous observation
    _updates_seen_from: int | None = None  # run.updates when this client first saw an update begin
    _note: str | None = None
    _update_mark: tuple[int, float] | None = None  # (run.updates, update seconds so far) when it last moved
    run: RunStatus | None = None

    # -- observing --------------------------------------------------------------------------------
    def observe(self, run: RunStatus, now: float, wall: float | None = None) -> list[str]:
        """Take one polled status (``now``: monotonic, ``wall``: ``time.time()``); the lines worth printing."""
        wall = time.time() if wall is None else wall
        self.run = run
        phase = run.phase if run.state in (RunState.PENDING, RunState.RUNNING, RunState.STOPPING) else None
        if self._last is not None and self._last[1] is not None:
            self.seconds_in[self._last[1]] += now - self._last[0]
        self._last = (now, phase.kind if phase else None)
        if self._update_mark is None or self._update_mark[0] != run.updates:
            self._update_mark = (run.updates, self._update_seconds())
        key = (phase.label, phase.started_at) if phase else None
        lines: list[str] = []
        if self._watched is None or key != self._watched.key:
            self._close(now, wall)
            self._watched = _Watched(key, phase, now, now) if phase else None
            if phase and phase.kind in UPDATE_KINDS and self._updates_seen_from is None:
                self._updates_seen_from = run.updates
        elif phase.done != self._watched.phase.done:
            self._watched.moved_at = now
        if self._watched is not None:
            self._watched.phase = phase
        note = phase.note if phase else None
        if note and note != self._note:
            lines.append(f"{phase.label}: {note}")
        self._note = note
        if self._watched is not None and not self._watched.said_slow and (slow := self._slow(now, wall)):
            self._watched.said_slow = True
            lines.append(slow)
        return lines

    def _close(self, now: float, wall: float) -> None:
        """The watched phase ended: remember how long it took (from the trainer's start time)."""
        w = self._watched
        if w is None:
            return
        took = self._since(w, now, wall)
        if w.phase.kind == "evaluating" and w.phase.total and w.phase.done:
            self.eval_episode_s.append(took / w.phase.done)
        elif not w.phase.total:
            self.durations[w.phase.kind].append(took)

    @staticmethod
    def _since(w: _Watched, now: float, wall: float) -> float:
        """Seconds since the phase began: by the trainer's clock, or this client's when the clocks disagree."""
        since = wall - w.phase.started_at
        return since if 0 <= since < 86400 else now - w.seen_at

    # -- what is drawn ----------------------------------------------------------------------------
    def elapsed(self, wall: float | None = None) -> float:
        """Seconds the watched phase has run."""
        w = self._watched
        return 0.0 if w is None else self._since(w, time.monotonic(), time.time() if wall is None else wall)

    def phase_eta(self, wall: float | None = None) -> float | None:
        """Seconds left in the watched phase, where its count or a past evaluation says."""
        w = self._watched
        if w is None or not w.phase.total:
            return None
        left = w.phase.total - w.phase.done
        elapsed = self.elapsed(wall)
        if w.phase.done > 0:
            return left * elapsed / w.phase.done
        if w.phase.kind == "evaluating" and self.eval_episode_s:
            return max(0.0, w.phase.total * statistics.median(self.eval_episode_s) - elapsed)
        return None

    def phase_text(self, wall: float | None = None) -> tuple[str, str]:
        """(the phase's name, its count and ETA): ("evaluating v0", "7/32 episodes, ETA 1m 10s")."""
        w = self._watched
        if w is None:
            return "", ""
        p = w.phase
        if p.total:
            eta = self.phase_eta(wall)
            count = f"{p.done}/{p.total} {p.unit}".rstrip()
            return p.label, f"{count}, ETA {duration(eta)}" if eta is not None else count
        return p.label, duration(self.elapsed(wall))

    def run_eta(self, wall: float | None = None) -> float | None:
        """Seconds until the run's episodes are spent and its last evaluation is done, or None (not measured yet)."""
        run = self.run
        if run is None or run.updates <= 0 or not run.episodes_total:
            return None
        watched_updates = run.updates - (
            self._updates_seen_from if self._updates_seen_from is not None else run.updates
        )
        if watched_updates <= 0:
            return None
        # The update in progress has already spent some of its time: without this the ETA would
        # climb through each update and drop at its end.
        in_progress = self._update_seconds() - (self._update_mark[1] if self._update_mark else 0.0)
        per_update = (self._update_seconds() - in_progress) / watched_updates
        per_update_episodes = run.episodes_done / run.updates
        last_update = run.updates + math.ceil(max(0, run.episodes_total - run.episodes_done) / per_update_episodes)
        left = max(0.0, (last_update - run.updates) * per_update - min(in_progress, per_update))
        in_eval = self._watched is not None and self._watched.phase.kind == "evaluating"
        if in_eval:
            left += self.phase_eta(wall) or 0.0
        episode_s = self._eval_episode_s(wall)
        if self.plan.eval_every and self.plan.eval_episodes and episode_s is not None:
            due = [u for u in range(run.updates + 1, last_update + 1) if u % self.plan.eval_every == 0]
            if last_update % self.plan.eval_every and last_update > run.updates:
                due.append(last_update)  # the final evaluation
            left += len(due) * self.plan.eval_episodes * episode_s
        return left

    def _update_seconds(self) -> float:
        return sum(self.seconds_in[k] for k in UPDATE_KINDS)

    def _eval_episode_s(self, wall: float | None) -> float | None:
        if self.eval_episode_s:
            return statistics.median(self.eval_episode_s)
        w = self._watched
        if w is not None and w.phase.kind == "evaluating" and w.phase.done > 0:
            return self.elapsed(wall) / w.phase.done
        return None

    def _slow(self, now: float, wall: float) -> str | None:
        """A line when the watched phase has stalled well past what this run has shown so far."""
        w = self._watched
        p = w.phase
        if p.total:
            quiet = now - w.moved_at
            per_item = self.elapsed(wall) / p.done if p.done else None
            if p.kind == "evaluating" and per_item is None and self.eval_episode_s:
                per_item = statistics.median(self.eval_episode_s)
            threshold = max(self.stall_s, 3 * per_item) if per_item else 2 * self.stall_s
            if quiet > threshold:
                return f"{p.label}: no {p.unit or 'progress'} for {duration(quiet)} ({p.done}/{p.total}); still waiting"
            return None
        usual = statistics.median(self.durations[p.kind]) if self.durations[p.kind] else None
        threshold = max(self.stall_s, 3 * usual) if usual else 2 * self.stall_s
        elapsed = self.elapsed(wall)
        if elapsed > threshold:
            before = f" (it took {duration(usual)} before)" if usual else ""
            return f"{p.label} is taking {duration(elapsed)}{before}; still waiting"
        return None


@dataclass
class PlainLog:
    """When a log without a live display gets its next line: the phase (or the run's state) changed,
    or ``every_s`` passed since the last line."""

    every_s: float = PLAIN_EVERY_S
    _key: object = None
    _at: float | None = None

    def due(self, key: object, now: float) -> bool:
        if self._at is not None and key == self._key and now - self._at < self.every_s:
            return False
        self._key, self._at = key, now
        return True

    def left(self, now: float) -> float:
        """Seconds until a line is due however the run goes: the poller sleeps no longer than this."""
        return 0.0 if self._at is None else max(0.0, self.every_s - (now - self._at))


def plain_line(run: RunStatus, watch: RunProgress, wall: float | None = None) -> str:
    """The run in one line for a log: "12/100 episodes, update 3 (v3), reward 0.125 success 0.25,
    ETA 5m 10s | collecting update 4: 2/4 jobs, ETA 12s"; the state alone once it has ended."""
    eta = watch.run_eta(wall)
    head = (
        f"{run.episodes_done}/{run.episodes_total} episodes, update {run.updates} (v{run.policy_version}), "
        f"{scores(run)}, ETA {duration(eta)}"
    )
    label, detail = watch.phase_text(wall)
    if run.state in (RunState.FINISHED, RunState.STOPPED, RunState.FAILED):
        tail = run.state.value
    else:
        tail = f"{label}: {detail}" if label else run.state.value
    stamp = time.strftime("%H:%M:%S", time.localtime(time.time() if wall is None else wall))
    return f"{stamp} {head} | {tail}"
