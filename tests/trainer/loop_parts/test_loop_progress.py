"""The phases a run's loop reports (``RunPhase`` through ``phase_cb``), so that a progress line can say
what a run is doing between updates: the baseline evaluation counted episode by episode, each
update's collection, learner step, publish and checkpoint, and why a phase waits.

Real Redis, the real loop, learner and checkpoints, a scripted worker (tests/trainer/loop_harness.py).
"""

from __future__ import annotations

import asyncio
import json

import redis.asyncio as aioredis

from halo.cli.progress import Plan
from halo.schemas import RolloutJob, RolloutResult, RunPhase
from halo.settings.trainer import TrainerSettings
from halo.transport import CallError
from halo_trainer.loop_parts.parts import LoopStatus
from halo_trainer.loop_parts.pipeline import Outage
from halo_trainer.loop_parts.progress import Progress
from tests.trainer.loop_harness import episode, make_loop, run_with_worker


async def test_the_loop_names_each_phase_and_counts_evaluation_episodes(clean_redis, vllm_admin, base_model, tmp_path):
    redis = aioredis.from_url(clean_redis)
    loop = make_loop(redis, tmp_path / "run", vllm_admin.url, base_model, episodes=4, eval_every=1, eval_episodes=3)
    phases: list[RunPhase] = []
    updates: list[LoopStatus] = []

    async def on_phase(phase: RunPhase) -> None:
        phases.append(phase)

    async def on_update(status: LoopStatus) -> None:
        updates.append(status)

    loop.parts.phase_cb, loop.parts.status_cb = on_phase, on_update
    loop.parts.progress.min_interval_s = 0.0  # every change reported: the test reads them all

    async def play(job: RolloutJob) -> RolloutResult:
        if job.purpose == "eval":
            await asyncio.sleep(0.3)  # evaluation episodes end one by one, as on a real stack
        return episode(job, success=False)

    outcome, _ = await run_with_worker(loop, play)
    assert outcome == "finished"
    labels = [p.label for p in phases]
    assert labels[:2] == ["restoring the last checkpoint", "serving v0"]
    # The baseline evaluation: named with its version, its episodes counted up to the total.
    baseline = [p for p in phases if p.label == "evaluating v0"]
    assert baseline and {p.total for p in baseline} == {3} and {p.unit for p in baseline} == {"episodes"}
    assert [p.done for p in baseline] == sorted(p.done for p in baseline) and baseline[-1].done == 3
    assert len({p.done for p in baseline}) >= 2  # seen moving, not only at its end
    # Each of the 2 updates: collected (jobs counted), learned, published, evaluated, checkpointed, in order.
    for update in (1, 2):
        at = labels.index(f"collecting update {update}")
        collected = [p for p in phases[at:] if p.label == f"collecting update {update}"]
        assert collected[-1].done == collected[-1].total == 2 and collected[-1].unit == "jobs"
        order = [f"update {update}: learner step on 2 jobs", f"publishing v{update} into vLLM"]
        order += [f"evaluating v{update}", f"checkpointing update {update}"]
        assert [labels.index(x, at) for x in order] == sorted(labels.index(x, at) for x in order)
    assert labels[-1] == "final checkpoint at update 2" or labels[-1] == "checkpointing update 2"
    assert all(p.started_at > 0 and p.note is None for p in phases)
    # The update reports are what they were: one per update, and they carry the phase too.
    assert [s.updates for s in updates] == [1, 2, 2] and all(s.phase is not None for s in updates)
    await redis.aclose()


async def test_a_wait_for_vllm_is_said_in_the_phase_and_cleared_when_rollouts_succeed():
    reports: list[RunPhase] = []
    progress = Progress(min_interval_s=0.0)

    async def report() -> None:
        reports.append(progress.phase.model_copy())

    progress._report = report
    down = True

    async def ready() -> None:
        if down:
            raise CallError("policy", "connection refused")

    outage = Outage(600, ready, progress)
    await progress.enter("collecting", "collecting update 5", unit="jobs")
    outage.failed("policy server: 503")
    assert not await outage.may_publish()  # vLLM not ready: replacements wait
    await progress.tick()
    assert reports[-1].note.startswith("waiting for vLLM (0 s of 600): connection refused")
    down = False
    outage.succeeded()
    await progress.tick()
    assert reports[-1].note is None and reports[-1].label == "collecting update 5"


async def test_progress_reports_a_change_at_most_once_per_interval_and_a_new_phase_at_once():
    calls: list[tuple[str, int]] = []
    progress = Progress(min_interval_s=60.0)

    async def report() -> None:
        calls.append((progress.phase.label, progress.phase.done))

    progress._report = report
    await progress.enter("evaluating", "evaluating v3", total=32, unit="episodes")
    for done in range(1, 5):
        progress.advance(done)
        await progress.tick()
    assert calls == [("evaluating v3", 0)]  # the changes inside the interval wait
    await progress.enter("collecting", "collecting update 4")
    assert calls[-1] == ("collecting update 4", 0)
    progress.advance(1, 2)
    await progress.tick(force=True)
    assert calls[-1] == ("collecting update 4", 1) and progress.phase.total == 2


def test_halo_train_reads_the_evaluation_schedule_from_the_run_folder_the_viewer_serves(tmp_path):
    """`halo train`'s ETA counts the evaluations still due: it reads ``eval_every`` and
    ``eval_episodes`` from the run's config.json as the trainer writes it, through the viewer's route."""
    from fastapi.testclient import TestClient

    from halo.cli.train_commands import _plan
    from halo.schemas import RunSpec
    from halo_trainer.config import load_defaults, resolve
    from halo_trainer.observe.viewer.__main__ import build_app

    settings = TrainerSettings()
    spec = RunSpec(domain="playground", eval_every=7, eval_episodes=12)
    cfg = resolve(spec, "r1", ["local.playground-1"], load_defaults(settings.rl_config), "tiny")
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    # the shape RunManager writes (api/runs.py)
    (run_dir / "config.json").write_text(json.dumps({"run": cfg.model_dump(mode="json"), "trainer": {}}))
    with TestClient(build_app(run_dir, tmp_path / "shots")) as client:
        assert _plan(client, "r1") == Plan(eval_every=7, eval_episodes=12)
        assert _plan(client, "no-such-run") == Plan()  # unknown: the ETA leaves evaluations out
