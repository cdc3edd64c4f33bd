"""`halo train`'s progress: the phase named with its count and ETA, the run's ETA from measured rates,
and a line when a phase stalls or the trainer says why it waits (``halo.cli.progress``).

The timeline is a newcomer's first run on the embedded default: 100 episodes, 4 an update
(25 updates), a 32-episode evaluation before the first update and every 10 (and after the last),
about 4.4 s an evaluation episode and 20 s an update, polled every 2 s as `halo train` polls.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import httpx
import pytest
from typer.testing import CliRunner

from halo.cli.progress import PLAIN_EVERY_S, PlainLog, Plan, RunProgress, duration, plain_line
from halo.schemas import RunPhase, RunSpec, RunState, RunStatus

T0 = 1_800_000_000.0  # the trainer's wall clock at the run's start


@dataclass
class Step:
    kind: str
    label: str
    seconds: float
    total: int | None = None
    unit: str = ""
    note: str | None = None


def newcomer_timeline(publish_stall_at: int | None = None) -> list[tuple[Step, int]]:
    """Each phase with the update count once it ends (updates count when the learner step ends)."""
    steps: list[tuple[Step, int]] = [
        (Step("starting", "restoring the last checkpoint", 2), 0),
        (Step("evaluating", "evaluating v0", 140, 32, "episodes"), 0),
    ]
    for u in range(1, 26):
        steps.append((Step("collecting", f"collecting update {u}", 14, 1, "jobs"), u - 1))
        steps.append((Step("updating", f"update {u}: learner step on 1 jobs", 3), u))
        stalled = publish_stall_at == u
        note = "waiting for vLLM to serve v11: connection refused" if stalled else None
        steps.append((Step("publishing", f"publishing v{u} into vLLM", 200 if stalled else 1, note=note), u))
        if u % 10 == 0 or u == 25:
            steps.append((Step("evaluating", f"evaluating v{u}", 140, 32, "episodes"), u))
        steps.append((Step("checkpointing", f"checkpointing update {u}", 2), u))
    return steps


def status_at(steps: list[tuple[Step, int]], t: float) -> RunStatus:
    """The run's status ``t`` seconds after it began, as the trainer would answer."""
    start, updates = 0.0, 0
    for step, updates_after in steps:
        if t < start + step.seconds:
            done = min(step.total, math.floor(step.total * (t - start) / step.seconds)) if step.total else 0
            phase = RunPhase(
                kind=step.kind,
                label=step.label,
                done=done,
                total=step.total,
                unit=step.unit,
                started_at=T0 + start,
                note=step.note,
            )
            return _status(RunState.RUNNING, updates, phase)
        start += step.seconds
        updates = updates_after
    return _status(RunState.FINISHED, 25, None)


def _status(state: RunState, updates: int, phase: RunPhase | None) -> RunStatus:
    return RunStatus(
        run_id="r",
        state=state,
        spec=RunSpec(domain="playground"),
        created_at=T0,
        updated_at=T0,
        episodes_done=4 * updates,
        episodes_total=100,
        updates=updates,
        policy_version=updates,
        latest_metrics={"rollout/mean_reward": 0.1} if updates else {},
        phase=phase,
    )


def total_seconds(steps: list[tuple[Step, int]]) -> float:
    return sum(s.seconds for s, _ in steps)


def watch_until(progress: RunProgress, steps, until: float, every: float = 2.0) -> list[str]:
    """Poll from the start (or where the last call stopped) up to ``until``; the lines printed."""
    lines, t = [], getattr(progress, "_test_t", 0.0)
    while t <= until:
        lines += progress.observe(status_at(steps, t), now=t, wall=T0 + t)
        t += every
    progress._test_t = t
    return lines


def test_the_baseline_evaluation_is_named_and_counted_with_its_eta():
    steps = newcomer_timeline()
    progress = RunProgress(Plan(eval_every=10, eval_episodes=32))
    assert watch_until(progress, steps, 72) == []
    label, detail = progress.phase_text(wall=T0 + 72)
    # 70 s into a 140 s evaluation: 16 of 32 episodes, and the rest at that rate
    assert label == "evaluating v0"
    assert detail == "16/32 episodes, ETA 1m 10s"
    assert progress.run_eta(wall=T0 + 72) is None  # no update watched yet: no run ETA, rather than a guess


def test_the_run_eta_counts_the_updates_and_evaluations_left_and_comes_true():
    steps = newcomer_timeline()
    progress = RunProgress(Plan(eval_every=10, eval_episodes=32))
    end = total_seconds(steps)
    watch_until(progress, steps, 300)
    assert progress.run_eta(wall=T0 + 300) == pytest.approx(end - 300, rel=0.15)
    # Inside an update the ETA counts down with the clock (2 s a poll); it does not climb until the update ends.
    u12 = next(i for i, (s, _) in enumerate(steps) if s.label == "collecting update 12")
    u12_start = sum(s.seconds for s, _ in steps[:u12])
    assert u12_start > 300
    etas = []
    for at in range(int(u12_start) + 1, int(u12_start) + 19, 2):
        watch_until(progress, steps, at)
        etas.append(progress.run_eta(wall=T0 + at))
    assert all(a - 2.5 <= b <= a - 1.0 for a, b in zip(etas, etas[1:], strict=False)), etas
    for at in (600, 900):  # past the v10 evaluation, and later
        watch_until(progress, steps, at)
        assert progress.run_eta(wall=T0 + at) == pytest.approx(end - at, rel=0.15), at
    # At the v10 evaluation, before its first episode: its ETA from the baseline's rate.
    fresh = RunProgress(Plan(eval_every=10, eval_episodes=32))
    v10 = next(i for i, (s, _) in enumerate(steps) if s.label == "evaluating v10")
    v10_start = sum(s.seconds for s, _ in steps[:v10])
    watch_until(fresh, steps, v10_start + 1)
    label, detail = fresh.phase_text(wall=T0 + v10_start + 1)
    assert label == "evaluating v10" and detail.startswith("0/32 episodes, ETA ")
    assert fresh.phase_eta(wall=T0 + v10_start + 1) == pytest.approx(139, rel=0.1)


def test_updates_are_named_and_a_phase_without_a_count_shows_its_time():
    steps = newcomer_timeline()
    progress = RunProgress(Plan(eval_every=10, eval_episodes=32))
    watch_until(progress, steps, 150)  # the first update's collection
    label, detail = progress.phase_text(wall=T0 + 150)
    assert label == "collecting update 1" and detail == "0/1 jobs"
    watch_until(progress, steps, 157)
    label, detail = progress.phase_text(wall=T0 + 157)
    assert label == "update 1: learner step on 1 jobs" and detail.endswith("s")


def test_a_stalled_phase_and_the_trainers_note_are_said_once():
    steps = newcomer_timeline(publish_stall_at=11)
    progress = RunProgress(Plan(eval_every=10, eval_episodes=32))
    stall = next(i for i, (s, _) in enumerate(steps) if s.label == "publishing v11 into vLLM")
    stall_start = sum(s.seconds for s, _ in steps[:stall])
    assert watch_until(progress, steps, stall_start - 1) == []  # nothing unusual before
    lines = watch_until(progress, steps, stall_start + 199)
    assert lines[0] == "publishing v11 into vLLM: waiting for vLLM to serve v11: connection refused"
    # usually a second: said after the floor of a minute, once
    # A second when it was seen before (most publishes end between two polls): said after a minute
    # or two, once, with how long it has taken.
    assert len(lines) == 2 and re.fullmatch(
        r"publishing v11 into vLLM is taking [12]m \d\ds(.*); still waiting", lines[1]
    )
    assert watch_until(progress, steps, total_seconds(steps) + 4) == []


def test_an_evaluation_with_no_episode_finishing_is_said():
    steps = [(Step("evaluating", "evaluating v0", 1000, 32, "episodes"), 0)]
    progress = RunProgress(Plan(eval_every=10, eval_episodes=32))
    stuck = status_at(steps, 0)  # 0/32 however long it is watched: nothing to measure a rate from
    lines = []
    for t in range(0, 200, 2):
        lines += progress.observe(stuck, now=float(t), wall=T0 + t)
    assert lines == ["evaluating v0: no episodes for 2m 02s (0/32); still waiting"]


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # escape codes, carriage returns, backspaces
PLAIN = re.compile(
    r"\d\d:\d\d:\d\d \d+/100 episodes, update \d+ \(v\d+\), (no update yet|reward \S+ success \S+), ETA \S+( \S+)? \| .+"
)


def test_a_log_gets_a_plain_line_at_each_phase_change_and_every_15_s():
    """Without a terminal `halo train` prints plain lines (``_log``): the run's whole timeline polled
    every 2 s, each phase named at least once, no two lines more than 15 s and a poll apart."""
    steps = newcomer_timeline()
    progress, log = RunProgress(Plan(eval_every=10, eval_episodes=32)), PlainLog()
    printed: list[tuple[float, str]] = []
    polled: set[str] = set()
    t = 0.0
    while t <= total_seconds(steps) + 2:
        status = status_at(steps, t)
        polled |= {status.phase.label} if status.phase else set()
        progress.observe(status, now=t, wall=T0 + t)
        if log.due((status.state, progress.phase_text(wall=T0 + t)[0]), t):
            printed.append((t, plain_line(status, progress, wall=T0 + t)))
        t += min(2.0, log.left(t)) or 2.0
    lines = [line for _, line in printed]
    assert all(PLAIN.fullmatch(line) for line in lines[:-1]), [x for x in lines if not PLAIN.fullmatch(x)][:3]
    assert lines[-1].endswith("100/100 episodes, update 25 (v25), reward 0.100 success -, ETA 0s | finished")
    assert not any(CONTROL.search(line) for line in lines)
    gaps = [b - a for (a, _), (b, _) in zip(printed, printed[1:], strict=False)]
    assert max(gaps) <= PLAIN_EVERY_S <= 15, max(gaps)
    assert len(polled) > 70  # most phases (a 1 s publish mostly ends between two polls)
    for label in polled:
        assert any(f"| {label}: " in line for line in lines), label
    # a 140 s evaluation is heard from every 14 s, with its count and ETA
    v0 = [line.split(" | ")[1] for line in lines if "| evaluating v0: " in line]
    assert len(v0) == 10 and v0[0] == "evaluating v0: 0/32 episodes", v0
    assert all(re.fullmatch(r"evaluating v0: \d+/32 episodes, ETA (\d+m )?\d+s", x) for x in v0[1:]), v0


def test_durations_read_as_people_write_them():
    assert [duration(s) for s in (None, float("nan"), 0, 42.4, 187, 3725)] == [
        "-",
        "-",
        "0s",
        "42s",
        "3m 07s",
        "1h 02m",
    ]


# --- the commands, against a stand-in of the trainer's API ------------------------------------------
def _phase(**fields) -> RunPhase:
    return RunPhase(
        **(
            {
                "kind": "evaluating",
                "label": "evaluating v3",
                "done": 7,
                "total": 32,
                "unit": "episodes",
                "started_at": T0,
            }
            | fields
        )
    )


def _cli(monkeypatch: pytest.MonkeyPatch, answer) -> None:
    from halo.cli import train_commands

    monkeypatch.setattr(
        train_commands,
        "_client",
        lambda settings: httpx.Client(base_url="http://127.0.0.1:8400", transport=httpx.MockTransport(answer)),
    )
    monkeypatch.setattr(train_commands.stack_probes, "is_ready", lambda url: True)
    monkeypatch.setattr(train_commands.time, "sleep", lambda s: None)


def test_halo_runs_list_says_what_a_running_run_is_doing(monkeypatch: pytest.MonkeyPatch) -> None:
    from halo.cli import main as cli

    running = _status(RunState.RUNNING, 3, _phase()).model_copy(update={"run_id": "r-running"})
    done = _status(RunState.FINISHED, 25, None).model_copy(update={"run_id": "r-done"})
    body = json.dumps([json.loads(running.model_dump_json()), json.loads(done.model_dump_json())])
    _cli(monkeypatch, lambda request: httpx.Response(200, text=body))
    result = CliRunner().invoke(cli.app, ["runs", "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if "r-running" in x)
    assert "evaluating v3: 7/32 episodes" in line
    assert "evaluating" not in next(x for x in result.stdout.splitlines() if "r-done" in x)


def test_halo_runs_list_prints_whole_run_ids_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The id is what `halo runs status|stop` take: never cut to "…", at 80 columns and with the
    longest name a run may have (40 characters before the id's date)."""
    from halo.cli import main as cli

    ids = ["playground-20261201-215804-a1b2", "n" * 40 + "-20261201-215804-a1b2"]
    note = "waiting for vLLM (12 s of 600): connection refused"
    runs = [
        _status(RunState.RUNNING, 3, _phase(note=note)).model_copy(update={"run_id": ids[0]}),
        _status(RunState.FINISHED, 25, None).model_copy(update={"run_id": ids[1]}),
    ]
    body = json.dumps([json.loads(r.model_dump_json()) for r in runs])
    _cli(monkeypatch, lambda request: httpx.Response(200, text=body))
    result = CliRunner().invoke(cli.app, ["runs", "list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    rows = result.stdout.splitlines()
    assert rows[0].split() == ["run", "state", "episodes", "updates", "version", "now"]
    assert rows[1].split()[:5] == [ids[0], "running", "12/100", "3", "3"], rows
    assert any(row.split()[:2] == [ids[1], "finished"] for row in rows), rows
    assert "…" not in result.stdout
    # what the running run does wraps in its column, whole
    assert " ".join(" ".join(rows[1:-1]).split()).endswith(f"evaluating v3: 7/32 episodes ({note})")


def test_halo_train_prints_the_trainers_reason_for_a_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `halo train` draws comes from the statuses it polls: a note the trainer sets is printed once."""
    from halo.cli import main as cli

    note = "waiting for vLLM (12 s of 600): connection refused"
    polls = [
        _status(
            RunState.RUNNING,
            0,
            _phase(kind="collecting", label="collecting update 1", done=0, total=4, unit="jobs", note=note),
        ),
        _status(
            RunState.RUNNING,
            0,
            _phase(kind="collecting", label="collecting update 1", done=1, total=4, unit="jobs", note=note),
        ),
        _status(RunState.FINISHED, 25, None),
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(201, text=_status(RunState.PENDING, 0, None).model_dump_json())
        if request.url.path == "/runs/r":
            return httpx.Response(200, text=polls.pop(0).model_dump_json())
        return httpx.Response(404, json={"error": "no route"})

    _cli(monkeypatch, answer)
    result = CliRunner().invoke(cli.app, ["train", "--domain", "playground"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.stdout.count(f"collecting update 1: {note}") == 1
    assert "run r finished" in result.stdout
    # CliRunner's output is no terminal: a plain line per phase, no live display's control codes.
    assert not CONTROL.search(result.stdout.replace("\n", "")), repr(result.stdout)
    plain = [line for line in result.stdout.splitlines() if " episodes, update " in line]
    assert [line.split(" | ")[1] for line in plain] == ["collecting update 1: 0/4 jobs", "finished"], plain
