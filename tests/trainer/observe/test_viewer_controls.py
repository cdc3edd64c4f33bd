"""The viewer's run controls, compare view, evaluation pages and fork screenshots in real Chromium,
against the trainer's own app (``create_app``: the run API beside the viewer, its bearer token set).

The run manager is real (its validation, task choice, registry in a Redis of the test's own, stop);
only its training task is a stand-in that saves two adapter versions and waits for the stop, since
training itself is tested in test_runs.py. The step-group episode and the evaluation folder are hand-made
in the shapes EpisodeLog and ``halo eval`` write (the evaluation's numbers from its own statistics).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from pydantic import SecretStr

from halo.policy_client import PolicyClient
from halo.schemas import RunEvent, RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.api.app import create_app
from halo_trainer.api.runs import RunManager
from halo_trainer.evaluation.stats import mode_summary, paired_test
from tests.conftest import noise_png
from tests.trainer.observe.viewer_page import open_view
from tests.trainer.serve_app import serve
from tests.trainer.stand_ins import EnvStandIn, click
from tests.trainer.viewer_layout import layout_problems

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TOKEN = "controls-token"
SHOTS = Path(os.environ.get("HALO_VIEWER_SHOTS", tempfile.gettempdir()))
EVAL = "evalpage01"
FORKS = "forks-run"


def write_run(runs: Path, run_id: str, algorithm: str, lines: list[dict], created: float) -> Path:
    folder = runs / run_id
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"run": {"algorithm": algorithm, "domain": "playground"}}))
    status = RunStatus(
        run_id=run_id,
        state=RunState.FINISHED,
        spec=RunSpec(domain="playground", algorithm=algorithm),
        created_at=created,
        updated_at=created,
        updates=len(lines),
        run_dir=str(folder),
    )
    (folder / "status.json").write_text(status.model_dump_json())
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def compare_runs(runs: Path) -> dict[str, list[dict]]:
    """Two runs whose updates took different env steps and wall time: the three x axes differ."""
    a = [
        {"update": u, "time": 1000.0 + 60 * u, "rollout/transitions": 6.0, "rollout/mean_reward": 0.1 * u}
        | (
            {"eval/success_rate": 0.2 * u, "eval/ci_low": 0.1 * u, "eval/ci_high": min(1.0, 0.2 * u + 0.15)}
            if u % 2 == 0
            else {}
        )
        for u in (1, 2, 3, 4)
    ]
    b = [
        {"update": u, "time": 5000.0 + 30 * u, "mcts/env_steps": 20.0, "rollout/mean_reward": 0.5 - 0.1 * u}
        | {"eval/success_rate": 0.1, "eval/ci_low": 0.02, "eval/ci_high": 0.4}
        for u in (1, 2, 3)
    ]
    write_run(runs, "compare-a", "grpo", a, created=1000.0)
    write_run(runs, "compare-b", "mcts", b, created=5000.0)
    return {"compare-a": a, "compare-b": b}


def fork_run(runs: Path, store: ScreenshotStore) -> dict:
    """A step-group episode's record in the shape EpisodeLog writes it (how a run fills
    ``next_screenshot`` is tested in test_viewer_routes.py, without a browser), real PNGs in the store."""
    folder = write_run(runs, FORKS, "grpo", [], created=1.0)
    steps = []
    for k in range(2):
        candidates = []
        for i in range(3):
            action = click(100 + 300 * i)
            candidates.append(
                {"transition_id": f"{FORKS}-s{k}-c{i}", "action": action.arguments(), "action_text": action.short()}
                | {"raw": action.short(), "parse_error": None, "reward": {"total": 0.1 * i}, "milestones": []}
                | {"advantage": 0.1 * i - 0.1, "policy_version": 1, "kept": i == 0, "task_success": None}
                | {"next_screenshot": store.put(noise_png(320, 180, seed=10 * k + i))}
            )
        shot = store.put(noise_png(640, 360, seed=100 + k))
        steps.append({"step": k, "screenshot": shot, "group_id": f"{FORKS}-g-s{k}", "candidates": candidates})
    record = {
        "episode_id": f"{FORKS}-e0",
        "job_id": f"{FORKS}-j0",
        "group_id": f"{FORKS}-g",
        "task_id": "local.playground-1",
    }
    record |= {"purpose": "train", "update": 1, "policy_version": 1, "success": False, "episode_return": 0.3}
    record |= {"infra_error": False, "screenshots": [s["screenshot"] for s in steps], "steps": steps}
    (folder / "episodes.jsonl").write_text(json.dumps(record) + "\n")
    return record


def eval_folder(root: Path, store: ScreenshotStore) -> dict:
    folder = root / EVAL
    folder.mkdir(parents=True)
    modes = ["qwen3vl_base", "qwen3vl_grpo"]
    tasks = ["local.playground-1", "local.playground-2", "local.zilloft-1"]
    records = []
    for mode in modes:
        for i, task in enumerate(tasks):
            for seed in (11, 12):
                success = (mode == "qwen3vl_grpo" and seed == 11) or (i == 0 and seed == 12)
                site = task.split(".", 1)[1].rsplit("-", 1)[0]
                records.append(
                    {"mode": mode, "task": task, "seed": seed, "site": site, "infra_failures": 0, "scored": True}
                    | {"success": success, "return": float(success), "steps": 2, "valid_actions": 2}
                    | {"actions": ["click(100, 500)", "stop(success)"], "elapsed_s": 1.0}
                )
    # One record as the matrix would write it with the episode's path (screenshots before each action and after the last).
    records[0]["screenshots"] = [store.put(noise_png(640, 360, seed=200 + k)) for k in range(3)]
    plan = {"modes": modes, "tasks": tasks, "seeds": [11, 12], "notes": ["hand-made for the viewer test"]}
    results = {
        "eval_id": EVAL,
        "plan": plan,
        "modes": {m: mode_summary(r for r in records if r["mode"] == m) for m in modes},
        "paired": [
            {"a": "qwen3vl_base", "b": "qwen3vl_grpo"}
            | paired_test([r for r in records if r["mode"] == modes[0]], [r for r in records if r["mode"] == modes[1]])
        ],
    }
    (folder / "plan.json").write_text(json.dumps(plan))
    (folder / "results.json").write_text(json.dumps(results))
    (folder / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return results


class Trainer:
    def __init__(self, url: str, settings: TrainerSettings, evals: EvalSettings, data: dict) -> None:
        self.url, self.settings, self.evals, self.data = url, settings, evals, data


@pytest.fixture(scope="module")
def trainer(own_redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trainer]:
    data_dir = tmp_path_factory.mktemp("trainer-data")
    settings = TrainerSettings(data_dir=data_dir, redis_url=own_redis_url, api_token=SecretStr(TOKEN))
    evals = EvalSettings(data_dir=data_dir, checkpoints_dir=data_dir / "checkpoints")
    store = ScreenshotStore(settings.screenshots_dir)
    data = {
        "compare": compare_runs(settings.runs_dir),
        "forks": fork_run(settings.runs_dir, store),
        "eval": eval_folder(evals.results_dir, store),
    }
    redis = aioredis.from_url(own_redis_url)
    env = EnvStandIn({"local.playground-1": True, "local.playground-2": True})
    manager = RunManager(settings, redis, PolicyClient("http://127.0.0.1:9", "halo-base"), store, env)

    async def train(cfg, status: RunStatus, stop: asyncio.Event) -> None:
        """The run task's stand-in: running, two adapter versions saved, then stopped when asked."""
        for v in (1, 2):
            adapter = Path(status.run_dir) / "adapters" / f"v{v}"
            adapter.mkdir(parents=True)
            (adapter / "adapter_config.json").write_text(json.dumps({"r": 8, "version": v}))
            (adapter / "adapter_model.safetensors").write_bytes(bytes([v]) * 128)
        status.state, status.updates, status.policy_version = RunState.RUNNING, 2, 2
        await manager.registry.save(status)
        await stop.wait()
        manager.active.pop(cfg.run_id, None)
        status.state = RunState.STOPPED
        await manager.registry.save(status)
        done = RunEvent(run_id=cfg.run_id, kind="done", data={"state": "stopped"})
        await redis.rpush(keys.events(cfg.run_id), done.model_dump_json())

    manager._train = train
    app = create_app(settings, evals)
    app.state.manager = manager
    # lifespan off: the app's own would start rollout workers and real service clients; the manager is set above.
    with serve(app, lifespan="off") as url:
        yield Trainer(url, settings, evals, data)


@pytest.fixture(scope="module")
def viewer_url(trainer: Trainer) -> str:
    return trainer.url


async def message(view, selector: str) -> str:
    """The answer shown under a control, once it is one (not the "Starting…" while the request is out)."""
    await view.wait_for_function(
        "s => { const n = document.querySelector(s + ' .error, ' + s + ' .notice');"
        " return n && !n.textContent.endsWith('…'); }",
        arg=selector,
    )
    return await view.locator(selector).inner_text()


async def test_start_a_run_from_the_form_stop_it_and_promote_its_adapter(page, trainer: Trainer) -> None:
    await open_view(page, f"{trainer.url}/ui/")
    form = page.locator("#start-run")
    await form.locator("input[name=domain]").fill("playground")
    await form.locator("input[name=tasks]").fill("local.playground-1")
    await form.locator("input[name=episodes]").fill("0")
    # No token yet: the page says so before sending anything.
    await form.locator("button[type=submit]").click()
    assert "needs its API token" in await message(page, "#start-message")
    # A wrong token: the trainer's 401, told plainly, and the token forgotten.
    await page.fill("#token", "wrong")
    await page.click("#token-save")
    await form.locator("button[type=submit]").click()
    text = await message(page, "#start-message")
    assert "refused the token (401)" in text and "bearer token" in text and "Traceback" not in text
    assert await page.evaluate("sessionStorage.getItem('haloTrainerToken')") is None
    # The right token, from its file as the local stack writes it (read in the page, never sent in a
    # URL); the API's own validation message for episodes=0.
    token_file = {"name": "trainer-token", "mimeType": "text/plain", "buffer": f"{TOKEN}\n".encode()}
    await page.set_input_files("#token-file", files=[token_file])
    await page.wait_for_selector("#token-forget")
    assert await page.evaluate("sessionStorage.getItem('haloTrainerToken')") == TOKEN
    await form.locator("button[type=submit]").click()
    assert "422: invalid request: episodes: Input should be greater than or equal to 1" in await message(
        page, "#start-message"
    )
    await page.screenshot(path=str(SHOTS / "viewer-start.png"), full_page=True)
    await page.set_viewport_size({"width": 1280, "height": 800})  # the form and the runs table fit a 1,280-px window
    assert await layout_problems(page) == []
    await form.locator("input[name=episodes]").fill("40")
    await form.locator("input[name=learning_rate]").fill("2e-5")
    await form.locator("input[name=num_generations]").fill("4")
    await form.locator("button[type=submit]").click()
    await page.wait_for_url("**/ui/#/run/playground-*")
    run_id = page.url.rsplit("/", 1)[1]
    config = json.loads((trainer.settings.runs_dir / run_id / "config.json").read_text())["run"]
    assert (config["episodes"], config["learning_rate"], config["num_generations"]) == (40, 2e-5, 4)
    assert config["tasks"] == ["local.playground-1"]
    await page.wait_for_function("document.querySelector('#state')?.textContent === 'running'")
    await page.wait_for_selector("#stop-run")
    # Promote the newest version (v2 is offered first) to the grpo mode.
    assert await page.locator("#promote-version option").all_inner_texts() == ["v2", "v1"]
    await page.click("#promote")
    text = await message(page, "#control-message")
    assert "Promoted v2 to qwen3vl_grpo" in text and "qwen3vl_grpo-" in text
    record = json.loads((trainer.evals.checkpoints_dir / "qwen3vl_grpo_lora" / "promotion.json").read_text())
    assert (record["run_id"], record["version"]) == (run_id, 2)
    await page.screenshot(path=str(SHOTS / "viewer-run-controls.png"))
    await page.click("#stop-run")
    await page.wait_for_function("document.querySelector('#state')?.textContent === 'stopped'", timeout=15_000)
    await page.wait_for_selector("#stop-run", state="detached")
    # The console reports the refused requests themselves (401, 422), nothing else.
    assert all("Failed to load resource" in e and ("401" in e or "422" in e) for e in page.errors), page.errors


async def test_compare_two_runs_on_each_x_axis(page, trainer: Trainer) -> None:
    await open_view(page, f"{trainer.url}/ui/")
    await page.check('input.pick[value="compare-a"]')
    await page.check('input.pick[value="compare-b"]')
    await page.click("#compare")
    await page.wait_for_selector("#compare-charts .chart canvas")
    await page.wait_for_function("window.haloViewer.ready")
    runs = trainer.data["compare"]
    steps = {"compare-a": 6, "compare-b": 20}
    created = {"compare-a": 1000.0, "compare-b": 5000.0}
    for axis in ("update", "steps", "time"):
        await page.select_option("#compare-x", axis)
        for metric in ("rollout/mean_reward", "eval/success_rate", "eval/ci_high"):
            drawn = await page.evaluate(
                """m => { const c = window.haloViewer.compare[m === 'rollout/mean_reward' ? m : 'eval/success_rate'];
                   return c.series.filter(s => s.metric === m).map(s => [s.run,
                     c.data[0].map((x, i) => [x, c.data[s.index][i]]).filter(p => p[1] !== null)]); }""",
                metric,
            )
            assert sorted(r for r, _ in drawn) == ["compare-a", "compare-b"]
            for run_id, points in drawn:
                lines = runs[run_id]

                def x(line, run_id=run_id, axis=axis):
                    if axis == "update":
                        return line["update"]
                    if axis == "steps":
                        return steps[run_id] * line["update"]
                    return line["time"] - created[run_id]

                assert points == [[x(line), line[metric]] for line in lines if metric in line], (axis, metric)
    await page.select_option("#compare-x", "steps")
    await page.screenshot(path=str(SHOTS / "viewer-compare.png"), full_page=True)
    assert page.errors == []


async def test_an_evaluation_page_shows_the_matrix_paired_test_and_each_cells_episodes(page, trainer) -> None:
    results = trainer.data["eval"]
    await open_view(page, f"{trainer.url}/ui/#/evals")
    await page.click(f'#evals tr[data-eval="{EVAL}"] a')
    await page.wait_for_selector("#matrix")
    await page.wait_for_function("window.haloViewer.ready")
    await page.set_viewport_size({"width": 1280, "height": 800})
    assert await layout_problems(page) == []
    grpo = results["modes"]["qwen3vl_grpo"]
    row = page.locator('#matrix tr[data-mode="qwen3vl_grpo"]')
    overall = await row.locator('td.cell[data-site="*"]').inner_text()
    assert f"{grpo['successes']}/{grpo['n']}" in overall and f"{100 * grpo['ci_low']:.1f}%" in overall
    zilloft = grpo["sites"]["zilloft"]
    assert f"{zilloft['successes']}/{zilloft['n']}" in await row.locator('td.cell[data-site="zilloft"]').inner_text()
    assert f"k={grpo['pass_hat_k']['k']}" in await row.locator("td.pass-k").inner_text()
    [pair] = results["paired"]
    paired = await page.locator('#paired tr[data-pair="qwen3vl_base|qwen3vl_grpo"]').inner_text()
    assert f"{pair['p_value']:.3g}" in paired
    await page.screenshot(path=str(SHOTS / "viewer-eval.png"), full_page=True)
    # A cell opens its episode records; one with screenshots opens as a filmstrip.
    await page.locator('#matrix tr[data-mode="qwen3vl_base"] td.cell[data-site="playground"] a').click()
    await page.wait_for_selector("#eval-episodes")
    assert await page.locator("#eval-episodes tr[data-index]").count() == 4  # 2 playground tasks x 2 seeds
    await page.click("#eval-episodes a.filmstrip-link")
    await page.wait_for_selector("#filmstrip")
    await page.wait_for_function(
        "[...document.querySelectorAll('#filmstrip img.shot')].every(i => i.complete && i.naturalWidth > 0)"
    )
    assert await page.locator("#filmstrip .frame").count() == 3
    assert "final page" in await page.locator('#filmstrip .frame[data-step="2"]').inner_text()
    assert page.errors == []


async def test_each_fork_of_a_step_group_shows_the_screenshot_it_led_to(page, trainer: Trainer) -> None:
    record = trainer.data["forks"]
    await open_view(page, f"{trainer.url}/ui/#/run/{FORKS}/episode/{record['episode_id']}")
    await page.wait_for_selector("#filmstrip")
    await page.wait_for_function(
        "[...document.querySelectorAll('.fork img.next')].every(i => i.complete && i.naturalWidth === 320)"
    )
    for step in record["steps"]:
        srcs = await page.eval_on_selector_all(
            f'.frame[data-step="{step["step"]}"] .fork img.next', "els => els.map(e => e.getAttribute('src'))"
        )
        assert srcs == [f"/ui/api/screenshots/{c['next_screenshot']}.png" for c in step["candidates"]]
    await page.locator('.frame[data-step="0"]').screenshot(path=str(SHOTS / "viewer-forks.png"))
    assert page.errors == []
