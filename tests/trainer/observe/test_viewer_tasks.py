"""Success per task: what the loops record (eval.jsonl's ``tasks``, train_tasks.jsonl), how the
viewer's route aggregates it (``GET /ui/api/runs/{id}/tasks``: first and latest evaluation, first
and last training windows, 95% Wilson intervals, the rows that moved first), what it refuses, and
the run page's table in real Chromium on a run folder of every Playground task.

The run folders are written by the run's own writers (``eval_task_counts`` as the Evaluator calls
it, ``TrainTaskLog``), and the loops' part by the real GRPO and MCTS loops (tests/trainer/loop_harness.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from halo.schemas import (
    Action,
    EpisodeSummary,
    EvalJob,
    RolloutJob,
    RolloutResult,
    RunSpec,
    RunState,
    RunStatus,
    SearchJob,
    TaskSampling,
)
from halo.schemas.task_success import RunTaskSuccess
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.app import create_app
from halo_trainer.config import load_defaults, resolve
from halo_trainer.observe.metrics import wilson_interval
from halo_trainer.observe.task_counts import TrainTaskLog, eval_task_counts, train_task_counts
from halo_trainer.observe.viewer.__main__ import build_app
from halo_trainer.observe.viewer.task_success import run_task_success
from halo_trainer.rollout.play import run_job
from tests.conftest import noise_png
from tests.trainer.loop_harness import episode, make_loop, run_with_worker
from tests.trainer.mcts.test_mcts_loop import hand_made_search, mcts_loop
from tests.trainer.observe.viewer_page import SHOTS, open_view
from tests.trainer.serve_app import serve
from tests.trainer.stand_ins import EnvStandIn, PolicyStandIn, click, job_for, services

PLAYGROUND = [f"local.playground-{i}" for i in range(1, 13)]


def summary(task: str, success: bool | None, i: int = 0) -> EpisodeSummary:
    return EpisodeSummary(
        run_id="r",
        job_id=f"j{i}",
        episode_id=f"e{i}",
        group_id=f"j{i}",
        task_id=task,
        policy_version=0,
        purpose="eval",
        steps=1,
        episode_return=0.0,
        success=success,
        valid_actions=1,
    )


def eval_line(update: int, outcomes: list[tuple[str, bool | None]]) -> dict:
    """An eval.jsonl line as the Evaluator writes it (its per-task part by the Evaluator's own function)."""
    episodes = [summary(t, s, i) for i, (t, s) in enumerate(outcomes)]
    k = sum(e.success is True for e in episodes)
    return {
        "update": update,
        "time": float(update),
        "eval/success_rate": k / len(episodes),
        "tasks": eval_task_counts(episodes),
    }


def write_run(folder: Path, tasks: list[str], algorithm: str = "grpo") -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(
        json.dumps({"run": {"algorithm": algorithm, "domain": "playground", "tasks": tasks}})
    )
    return folder


def write_evals(folder: Path, lines: list[dict]) -> None:
    (folder / "eval.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


# -- what the loops count -----------------------------------------------------------------------------


async def test_training_counts_per_task_follow_the_run_wide_rollout_metrics() -> None:
    """Judged episodes and their successes, and every sampled candidate with those that completed the task."""
    # Candidate 0 of each step group ends the task with success, candidate 1 with failure, candidate 2 clicks on.
    answers = [Action(action="terminate", status="success"), Action(action="terminate", status="failure"), click(300)]
    policy = PolicyStandIn(lambda n, i: answers[:n])
    env = EnvStandIn({t: True for t in PLAYGROUND[:2]})
    results = []
    for i, task in enumerate(PLAYGROUND[:2] + PLAYGROUND[:1]):
        job = job_for(job_id=f"run-a-j{i}", group_id=f"run-a-j{i}", task_id=task, group_size=3, max_steps=2)
        results.append(await run_job(services(env=env, policy=policy), job))
    counts = train_task_counts(results)
    assert list(counts) == PLAYGROUND[:2]
    for task, c in counts.items():
        transitions = [t for r in results for t in r.transitions if t.task_id == task and not t.infra_error]
        episodes = [e for r in results for e in r.episodes if e.task_id == task and e.success is not None]
        assert c == {
            "episodes": len(episodes),
            "successes": sum(e.success for e in episodes),
            "samples": len(transitions),
            "sample_successes": sum(t.task_success is True for t in transitions),
        }
    assert counts[PLAYGROUND[0]]["samples"] > counts[PLAYGROUND[1]]["samples"] > 0  # two jobs on the first task
    assert counts[PLAYGROUND[0]]["sample_successes"] >= 2  # one success candidate per step group at least
    # An evaluation counts every episode it played; an unjudged one is a failure, as eval/success_rate has it.
    evaluated = eval_task_counts([summary("b", True), summary("a", None), summary("b", False), summary("a", True)])
    assert evaluated == {"a": {"episodes": 2, "successes": 1}, "b": {"episodes": 2, "successes": 1}}


async def test_the_grpo_loop_records_each_evaluation_and_update_per_task(
    clean_redis, vllm_admin, base_model, tmp_path
) -> None:
    redis = aioredis.from_url(clean_redis)
    tasks = PLAYGROUND[:2]
    run_dir = tmp_path / "run"
    loop = make_loop(  # tasks in turn: one job per task per update (the tiny profile draws them)
        redis,
        run_dir,
        vllm_admin.url,
        base_model,
        episodes=4,
        eval_every=2,
        eval_episodes=5,
        tasks=tasks,
        task_sampling=TaskSampling.ROUND_ROBIN,
    )

    async def play(job: RolloutJob) -> RolloutResult:
        # Held-out, only the second task succeeds; in training, only the first.
        return episode(job, success=(job.task_id == tasks[1]) == isinstance(job, EvalJob))

    outcome, _ = await run_with_worker(loop, play)
    assert outcome == "finished" and loop.c.updates == 2
    evals = [json.loads(x) for x in (run_dir / "eval.jsonl").read_text().splitlines()]
    assert [e["update"] for e in evals] == [0, 2]
    for e in evals:  # slot i plays task i mod 2: slots 0, 2, 4 the first task, 1 and 3 the second
        assert e["tasks"] == {tasks[0]: {"episodes": 3, "successes": 0}, tasks[1]: {"episodes": 2, "successes": 2}}
        assert sum(c["episodes"] for c in e["tasks"].values()) == e["eval/episodes"]
    train = [json.loads(x) for x in (run_dir / "train_tasks.jsonl").read_text().splitlines()]
    metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [t["update"] for t in train] == [m["update"] for m in metrics] == [1, 2]
    for t in train:  # two jobs an update, one per task; these results carry episodes and no samples
        assert t["tasks"] == {tasks[0]: {"episodes": 1, "successes": 1}, tasks[1]: {"episodes": 1, "successes": 0}}
    rows = {r.task_id: r for r in run_task_success(run_dir).tasks}
    assert (rows[tasks[1]].first_eval.successes, rows[tasks[1]].latest_eval.update) == (2, 2)
    assert rows[tasks[0]].train_first.episodes.successes == 1 and rows[tasks[0]].train_first.samples is None
    await redis.aclose()


async def test_the_mcts_loop_counts_searches_and_those_that_found_the_success(
    clean_redis, vllm_admin, base_model, tmp_path
) -> None:
    redis = aioredis.from_url(clean_redis)
    loop = mcts_loop(
        redis, tmp_path / "run", vllm_admin.url, base_model, None, episodes=4, jobs_per_update=2, theta=5.0
    )
    loop.cfg = loop.cfg.model_copy(update={"tasks": PLAYGROUND[:2]})  # what its search jobs are built from
    shot = loop.parts.store.put(noise_png(64, 64, seed=1))

    async def play(job: RolloutJob) -> RolloutResult:
        assert isinstance(job, SearchJob)
        # Its first action's value 1 is backed up: a success found. At theta 5 no pair reaches the learner.
        result = hand_made_search(loop, job, shot, [1, 2, 3])
        if job.task_id == PLAYGROUND[1]:
            result.search.metrics["success_found"] = 0.0
        return result

    outcome, _ = await run_with_worker(loop, play)
    assert outcome == "finished"
    train = [json.loads(x) for x in (loop.parts.run_dir / "train_tasks.jsonl").read_text().splitlines()]
    assert [t["update"] for t in train] == [1, 2]
    assert all(
        t["tasks"] == {PLAYGROUND[0]: {"episodes": 1, "successes": 1}, PLAYGROUND[1]: {"episodes": 1, "successes": 0}}
        for t in train
    )
    await redis.aclose()


# -- how the viewer aggregates it -------------------------------------------------------------------


def test_rows_give_first_and_latest_evaluation_and_non_overlapping_training_windows(tmp_path: Path) -> None:
    a, b, c, d = PLAYGROUND[0], PLAYGROUND[1], PLAYGROUND[9], PLAYGROUND[2]
    folder = write_run(tmp_path / "run", [a, b, c, d])
    write_evals(
        folder,
        [
            {"update": 0, "eval/success_rate": 0.0},  # written before per-task counts: not an evaluation here
            eval_line(0, [(a, False)] * 3 + [(b, True), (b, False), (b, False)]),
            eval_line(3, [(a, True), (a, False), (a, False)]),  # b not played in this one
            eval_line(6, [(a, True)] * 3 + [(b, False)] * 3),
        ],
    )
    with (folder / "eval.jsonl").open("a") as fh:
        fh.write('{"update": 9, "tasks": {"' + a)  # the line being written: skipped
    log = TrainTaskLog(folder / "train_tasks.jsonl")
    sampled_b = {b: {"episodes": 1, "successes": 0, "samples": 8, "sample_successes": 1}}
    for update in range(1, 13):
        hits = 0 if update <= 6 else 7
        counts = {a: {"episodes": 1, "successes": int(update > 6), "samples": 8, "sample_successes": hits}}
        log.write(update, counts | (sampled_b if update % 4 == 0 else {}))
    # Update 12 again (its results replayed after a restart): the later line replaces the first.
    log.write(12, {a: {"episodes": 1, "successes": 1, "samples": 8, "sample_successes": 8}} | sampled_b)
    log.write(13, {c: {"episodes": 2, "successes": 1}})  # one update only: no last window yet

    t = run_task_success(folder, window=5)
    assert (t.algorithm, t.window, t.evaluations, t.train_updates) == ("grpo", 5, 3, 13)
    # a moved (training samples up), listed first; then by the largest change; then by name, numbers
    # as numbers (playground-3 before playground-10).
    assert [r.task_id for r in t.tasks] == [a, b, d, c]
    ra, rb, rd, rc = t.tasks
    assert (ra.first_eval.update, ra.first_eval.successes, ra.first_eval.trials) == (0, 0, 3)
    assert (ra.latest_eval.update, ra.latest_eval.successes, ra.latest_eval.trials) == (6, 3, 3)
    assert (ra.latest_eval.ci_low, ra.latest_eval.ci_high) == pytest.approx(wilson_interval(3, 3))
    assert ra.held_out_moved is None  # 0/3 -> 3/3: the 95% intervals still overlap
    assert (ra.train_first.first_update, ra.train_first.last_update, ra.train_first.updates) == (1, 5, 5)
    assert (ra.train_first.samples.successes, ra.train_first.samples.trials) == (0, 40)
    assert (ra.train_last.first_update, ra.train_last.last_update) == (8, 12)
    assert (ra.train_last.samples.successes, ra.train_last.samples.trials) == (7 * 4 + 8, 40)
    assert (ra.train_last.episodes.successes, ra.train_last.episodes.trials) == (5, 5)
    assert ra.train_moved == "up" and ra.change == pytest.approx(1.0)
    # b: held-out at updates 0 and 6 (the evaluation at 3 did not play it); 3 updates sampled it: halves of 1.
    assert (rb.first_eval.update, rb.latest_eval.update) == (0, 6)
    assert (rb.first_eval.successes, rb.latest_eval.successes) == (1, 0)
    assert (rb.train_first.first_update, rb.train_last.first_update, rb.train_last.updates) == (4, 12, 1)
    assert rb.train_moved is None and rb.change == pytest.approx(1 / 3)
    # c: an MCTS-like count (no samples) on one update; d: named by the config, never played.
    assert rc.train_first.samples is None and rc.train_last is None and rc.first_eval is None
    assert (rd.first_eval, rd.latest_eval, rd.train_first, rd.train_last) == (None, None, None, None)
    # A smaller window: the last 2 of a's updates.
    ra2 = run_task_success(folder, window=2).tasks[0]
    assert (ra2.train_last.first_update, ra2.train_last.samples.successes) == (11, 15)


def test_a_change_the_intervals_support_marks_the_row_and_sorts_it_first(tmp_path: Path) -> None:
    a, b = PLAYGROUND[0], PLAYGROUND[1]
    folder = write_run(tmp_path / "run", [a, b])
    write_evals(
        folder,
        [eval_line(0, [(a, False)] * 20 + [(b, True)] * 20), eval_line(9, [(a, False)] * 20 + [(b, False)] * 20)],
    )
    t = run_task_success(folder)
    assert [(r.task_id, r.held_out_moved, r.train_moved) for r in t.tasks] == [(b, "down", None), (a, None, None)]


# -- the route ------------------------------------------------------------------------------------


@pytest.fixture
async def trainer(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = TrainerSettings(data_dir=tmp_path)
    folder = write_run(settings.runs_dir / "run-a", PLAYGROUND[:2])
    write_evals(folder, [eval_line(0, [(PLAYGROUND[0], False), (PLAYGROUND[1], True)])])
    broken = write_run(settings.runs_dir / "broken", [])
    (broken / "config.json").write_text("{not json")
    (broken / "eval.jsonl").write_text(
        '[1, 2]\n{"update": "x", "tasks": {}}\n{"update": 1, "tasks": {"t": {"episodes": 1, "successes": 2}}}\n'
    )
    (broken / "train_tasks.jsonl").write_text('{"update": -1, "tasks": {"t": {"episodes": 1}}}\n\x00\n')
    app = create_app(settings, EvalSettings(data_dir=tmp_path))  # its lifespan (Redis, workers) is not needed here
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer") as c:
        yield c


async def test_the_route_answers_a_typed_table_and_refuses_bad_input_with_a_4xx(trainer: httpx.AsyncClient) -> None:
    response = await trainer.get("/ui/api/runs/run-a/tasks")
    assert response.status_code == 200, response.text
    t = RunTaskSuccess.model_validate(response.json())
    assert (t.run_id, t.window, t.evaluations, [r.task_id for r in t.tasks]) == ("run-a", 5, 1, PLAYGROUND[:2])
    assert t.tasks[1].first_eval.rate == 1.0 and t.tasks[1].latest_eval == t.tasks[1].first_eval
    assert (await trainer.get("/ui/api/runs/run-a/tasks?window=3")).json()["window"] == 3
    cases = [
        ("/ui/api/runs/nope/tasks", 404, "no run 'nope'"),
        ("/ui/api/runs/..%2F..%2Fetc/tasks", 404, ""),
        ("/ui/api/runs/run-a/tasks?window=0", 422, "window"),
        ("/ui/api/runs/run-a/tasks?window=-3", 422, "window"),
        ("/ui/api/runs/run-a/tasks?window=10001", 422, "window"),
        ("/ui/api/runs/run-a/tasks?window=five", 422, "window"),
        ("/ui/api/runs/run-a/tasks?window=2.5", 422, "window"),
    ]
    for path, status, message in cases:
        response = await trainer.get(path)
        assert response.status_code == status, (path, response.text)
        assert message in response.text, (path, response.text)
    # Files of the wrong shape (a corrupt config, lines cut short or malformed) leave an empty table, not a 500.
    response = await trainer.get("/ui/api/runs/broken/tasks")
    assert response.status_code == 200, response.text
    assert response.json()["tasks"] == [] and response.json()["algorithm"] is None


async def test_halo_view_serves_the_same_route(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run-b", PLAYGROUND[:1])
    write_evals(folder, [eval_line(0, [(PLAYGROUND[0], True)])])
    app = build_app(folder, tmp_path / "shots")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://viewer") as c:
        assert (await c.get("/ui/api/runs/run-b/tasks")).json()["tasks"][0]["first_eval"]["successes"] == 1
        assert (await c.get("/ui/api/runs/other/tasks")).status_code == 404
        assert (await c.get("/ui/api/runs/run-b/tasks?window=0")).status_code == 422


# -- the run page in real Chromium ------------------------------------------------------------------

RUN = "playground-tasks"
UPDATES = 30
JOBS_PER_UPDATE = 4
N = 8  # candidates per step group


def sampled_hits(task: str, update: int) -> int:
    """A run where the fixed target learns, the moving one stays at chance and the rest never hit."""
    if task == PLAYGROUND[0]:
        return min(N, update // 3)
    if task == PLAYGROUND[1]:
        return 2
    return 0


@pytest.fixture(scope="module")
def tasks_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    folder = root / RUN
    folder.mkdir()
    cfg = resolve(RunSpec(domain="playground"), RUN, PLAYGROUND, load_defaults(TrainerSettings().rl_config), "tiny")
    (folder / "config.json").write_text(json.dumps({"run": cfg.model_dump(mode="json"), "trainer": {}}))
    status = RunStatus(
        run_id=RUN,
        state=RunState.FINISHED,
        spec=RunSpec(domain="playground"),
        created_at=1.0,
        updated_at=2.0,
        episodes_done=UPDATES * JOBS_PER_UPDATE,
        episodes_total=UPDATES * JOBS_PER_UPDATE,
        updates=UPDATES,
        policy_version=UPDATES,
        run_dir=str(folder),
    )
    (folder / "status.json").write_text(status.model_dump_json())
    # 32 held-out slots over 12 tasks (slot i plays task i mod 12): 3 episodes for tasks 1-8, 2 for 9-12.
    slots = [PLAYGROUND[i % 12] for i in range(32)]
    first = [(t, t == PLAYGROUND[1] and i == 1) for i, t in enumerate(slots)]
    latest = [
        (t, t == PLAYGROUND[0] or (t == PLAYGROUND[1] and i == 1) or (t == PLAYGROUND[4] and i == 4))
        for i, t in enumerate(slots)
    ]
    write_evals(folder, [eval_line(0, first), eval_line(10, [(t, False) for t in slots]), eval_line(UPDATES, latest)])
    log = TrainTaskLog(folder / "train_tasks.jsonl")
    for update in range(1, UPDATES + 1):
        counts = {}
        for j in range(JOBS_PER_UPDATE):
            task = PLAYGROUND[((update - 1) * JOBS_PER_UPDATE + j) % 12]
            hits = sampled_hits(task, update)
            counts[task] = {"episodes": 1, "successes": int(hits > N // 2), "samples": N, "sample_successes": hits}
        log.write(update, counts)
    return root


@pytest.fixture(scope="module")
def viewer_url(tasks_run: Path) -> Iterator[str]:
    with serve(build_app(tasks_run, tasks_run / "shots")) as url:
        yield url


def window_of(task: str, window: int, last: bool) -> tuple[int, int]:
    """(hits, samples) over the task's first or last ``window`` updates that sampled it."""
    updates = [
        u
        for u in range(1, UPDATES + 1)
        if task in {PLAYGROUND[((u - 1) * JOBS_PER_UPDATE + j) % 12] for j in range(JOBS_PER_UPDATE)}
    ]
    picked = updates[-window:] if last else updates[:window]
    return sum(sampled_hits(task, u) for u in picked), N * len(picked)


@pytest.mark.browser
@pytest.mark.slow
async def test_the_run_page_shows_success_per_task_with_the_tasks_that_moved_first(page, viewer_url: str) -> None:
    await page.set_viewport_size({"width": 1500, "height": 1000})  # the table's six columns, for the screenshot
    await open_view(page, f"{viewer_url}/ui/#/run/{RUN}")
    rows = page.locator("#tasks tr.task-row")
    assert await rows.count() == 12
    order = await rows.evaluate_all("rows => rows.map(r => r.dataset.task)")
    # The fixed target moved (training samples up): first, marked; the moving target and the rest did not.
    assert order[0] == PLAYGROUND[0] and set(order) == set(PLAYGROUND)
    fixed = page.locator(f'#tasks tr[data-task="{PLAYGROUND[0]}"]')
    assert await fixed.get_attribute("class") == "task-row moved-up"
    moved = await fixed.locator('td[data-col="moved"]').inner_text()
    assert "↑ training" in moved and "held-out +100 pts" in moved and "training +60 pts" in moved  # 10/40 -> 34/40
    # A held-out change of one episode in three is shown, not marked: its intervals overlap.
    fifth = page.locator(f'#tasks tr[data-task="{PLAYGROUND[4]}"]')
    assert (await fifth.get_attribute("class"), order[1]) == ("task-row", PLAYGROUND[4])
    assert "held-out +33 pts" in await fifth.locator('td[data-col="moved"]').inner_text()
    assert "[0%, 56.2%] 0/3" in await fixed.locator('td[data-col="first-eval"]').inner_text()
    assert "before training" in await fixed.locator('td[data-col="first-eval"]').inner_text()
    latest = await fixed.locator('td[data-col="latest-eval"]').inner_text()
    assert "[43.8%, 100%] 3/3" in latest and f"after update {UPDATES}" in latest
    for col, last in (("train-first", False), ("train-last", True)):
        hits, samples = window_of(PLAYGROUND[0], 5, last)
        low, high = wilson_interval(hits, samples)
        text = await fixed.locator(f'td[data-col="{col}"]').inner_text()
        assert f"{hits}/{samples}" in text and f"{100 * low:.1f}%" in text, (col, text)
        assert "5 updates," in text
    moving = page.locator(f'#tasks tr[data-task="{PLAYGROUND[1]}"]')
    assert await moving.get_attribute("class") == "task-row"
    assert "1/3" in await moving.locator('td[data-col="first-eval"]').inner_text()
    assert "1/3" in await moving.locator('td[data-col="latest-eval"]').inner_text()
    hits, samples = window_of(PLAYGROUND[1], 5, True)
    assert f"{hits}/{samples}" in await moving.locator('td[data-col="train-last"]').inner_text()
    # Tasks 9-12 had two held-out slots each.
    assert (
        "0/2" in await page.locator(f'#tasks tr[data-task="{PLAYGROUND[11]}"] td[data-col="latest-eval"]').inner_text()
    )
    await page.locator("#tasks-box").screenshot(path=str(SHOTS / "viewer-tasks.png"))
    # Another window: the page asks the route again and redraws with its figures.
    await page.select_option("#task-window", "3")
    await page.wait_for_function("window.haloViewer.tasks.window === 3")
    # The figures are fetched before the section is swapped into the page: wait for the new table, not the fetch.
    cell = f'#tasks tr[data-task="{PLAYGROUND[0]}"] td[data-col="train-last"]'
    await page.wait_for_function("(sel) => document.querySelector(sel)?.innerText.includes('3 updates,')", arg=cell)
    hits, samples = window_of(PLAYGROUND[0], 3, True)
    text = await page.locator(cell).inner_text()
    assert f"{hits}/{samples}" in text and "3 updates," in text
    assert page.errors == []
