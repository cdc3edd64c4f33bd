"""The run viewer in real Chromium, on a run folder loaded as ``halo view`` loads a finished run.

The folder is written by the run's own writers (MetricsLog, EpisodeLog on rollout results of the
stand-in services, status.json as RunRegistry writes it), with real PNG screenshots in the store.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from halo.schemas import GroupMode, RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.env import DEFAULT_CHROMIUM_ARGS
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import load_defaults, resolve
from halo_trainer.learner.batching import advantages_of
from halo_trainer.mcts.tree import Tree
from halo_trainer.observe.episode_log import EpisodeLog
from halo_trainer.observe.filmstrip import MARKER, to_image_pixels
from halo_trainer.observe.metrics import MetricsLog
from halo_trainer.observe.viewer.__main__ import build_app
from halo_trainer.rollout.play import run_job
from tests.conftest import noise_png
from tests.trainer.serve_app import serve
from tests.trainer.stand_ins import click, job_for, services
from tests.trainer.viewer_layout import layout_problems

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CHROMIUM = "/usr/bin/chromium"
RUN = "viewer-run"
# Each view's screenshot, for docs/viewer.md (copied to docs/img by hand when the page changes).
SHOTS = Path(os.environ.get("HALO_VIEWER_SHOTS", tempfile.gettempdir()))
METRICS = [
    {
        "rollout/mean_reward": 0.1,
        "train/loss": 2.0,
        "eval/success_rate": 0.25,
        "eval/ci_low": 0.05,
        "eval/ci_high": 0.6,
    },
    {"rollout/mean_reward": 0.3, "train/loss": 1.5, "eval/success_rate": float("nan")},
    {"rollout/mean_reward": 0.2, "train/loss": 1.0, "eval/success_rate": 0.5, "eval/ci_low": 0.2, "eval/ci_high": 0.8},
]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("runs")
    folder, store = root / RUN, ScreenshotStore(root / "shots")
    folder.mkdir()
    cfg = resolve(
        RunSpec(domain="playground", episodes=6),
        RUN,
        ["local.playground-1"],
        load_defaults(TrainerSettings().rl_config),
        "tiny",
    )
    (folder / "config.json").write_text(json.dumps({"run": cfg.model_dump(mode="json"), "trainer": {}}))
    status = RunStatus(
        run_id=RUN,
        state=RunState.FINISHED,
        spec=RunSpec(domain="playground"),
        created_at=1.0,
        updated_at=2.0,
        episodes_done=6,
        episodes_total=6,
        updates=3,
        policy_version=3,
        run_dir=str(folder),
    )
    (folder / "status.json").write_text(status.model_dump_json())
    # The evaluation before the first update is written to eval.jsonl only.
    first_eval = {"update": 0, "time": 0.5, "eval/success_rate": 0.125, "eval/ci_low": 0.0, "eval/ci_high": 0.5}
    (folder / "eval.jsonl").write_text(json.dumps(first_eval) + "\n")
    log = MetricsLog(folder / "metrics.jsonl")
    for update, metrics in enumerate(METRICS, start=1):
        log.write(update, update, metrics, run_id=RUN)
    job = job_for(run_id=RUN, job_id=f"{RUN}-j0", group_id=f"{RUN}-j0", group_size=3)
    result = asyncio.run(run_job(services(), job))
    [record] = EpisodeLog(folder / "episodes.jsonl", 1, advantages_of(GroupMode.STEP, "dr_grpo")).write(
        result, update=1
    )
    # The stand-in env names its screenshots by hash only: store real PNGs and point the steps (and
    # where each fork led) at them.
    for i, step in enumerate(record["steps"]):
        step["screenshot"] = store.put(noise_png(640, 360, seed=i))
        for j, candidate in enumerate(step["candidates"]):
            candidate["next_screenshot"] = store.put(noise_png(320, 180, seed=50 + 10 * i + j))
    (folder / "episodes.jsonl").write_text(json.dumps(record) + "\n")
    return root, store.root, record


@pytest.fixture(scope="module")
def viewer_url(run_folder) -> Iterator[str]:
    root, shots, _ = run_folder
    with serve(build_app(root, shots)) as url:
        yield url


@pytest.fixture
async def page(viewer_url: str) -> AsyncIterator:
    if not shutil.which(CHROMIUM):
        pytest.skip("Chromium is not installed")
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(DEFAULT_CHROMIUM_ARGS))
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.errors = errors
        yield page
        await browser.close()


async def open_view(page, url: str) -> None:
    await page.goto(url)
    await page.wait_for_function("window.haloViewer && window.haloViewer.ready")


async def test_the_runs_page_lists_the_run(page, viewer_url: str) -> None:
    await open_view(page, f"{viewer_url}/ui/")
    row = page.locator(f'tr[data-run="{RUN}"]')
    assert await row.count() == 1
    assert "finished" in await row.inner_text()
    await page.screenshot(path=str(SHOTS / "viewer-runs.png"))
    assert page.errors == []


async def test_the_curves_draw_the_points_of_metrics_jsonl(page, viewer_url: str, run_folder) -> None:
    await open_view(page, f"{viewer_url}/ui/#/run/{RUN}")
    lines = [json.loads(x) for x in (run_folder[0] / RUN / "metrics.jsonl").read_text().splitlines()]
    for name in ("rollout/mean_reward", "eval/success_rate", "train/loss"):
        drawn = await page.evaluate(
            "n => { const c = window.haloViewer.charts[n]; return [c.chart.data[0], c.chart.data[c.series]]; }", name
        )
        points = [(line["update"], line[name]) for line in lines if name in line and not math.isnan(line[name])]
        if name.startswith("eval/"):
            points.insert(0, (0, 0.125))  # from eval.jsonl
        assert [(x, y) for x, y in zip(*drawn, strict=True) if y is not None] == points
    assert await page.locator(".chart canvas").count() >= 3
    await page.screenshot(path=str(SHOTS / "viewer-curves.png"))
    assert page.errors == []


async def test_a_filmstrip_shows_a_frame_per_step_with_the_forks_of_each_group(page, viewer_url: str, run_folder):
    record = run_folder[2]
    await open_view(page, f"{viewer_url}/ui/#/run/{RUN}/episode/{record['episode_id']}")
    await page.wait_for_selector("#filmstrip")
    assert await page.locator("#filmstrip .frame").count() == len(record["steps"]) == 2
    assert await page.locator(".forks").count() == 2
    assert await page.locator(".fork").count() == 6 and await page.locator(".fork.kept").count() == 2
    await page.wait_for_function(
        "[...document.querySelectorAll('#filmstrip img.shot')].every(i => i.complete && i.naturalWidth > 0)"
    )
    # The kept candidate of step 0 clicked at (100, 500) in 0..1000 units: its ring is drawn there.
    src = await page.locator('#filmstrip .frame[data-step="0"] img.shot').get_attribute("src")
    png = httpx.get(viewer_url + src).content
    image = Image.open(io.BytesIO(png)).convert("RGB")
    x, y = to_image_pixels(record["steps"][0]["candidates"][0]["action"]["coordinate"], image.size)
    assert (x, y) == (64, 180)
    assert image.getpixel((x + max(6, image.width // 80), y)) == MARKER
    await page.screenshot(path=str(SHOTS / "viewer-episode.png"), full_page=True)
    assert page.errors == []


async def test_a_bad_run_id_and_a_missing_episode_give_a_clear_page(page, viewer_url: str) -> None:
    await open_view(page, f"{viewer_url}/ui/#/run/no-such-run")
    assert "no run 'no-such-run'" in await page.locator(".error").inner_text()
    await open_view(page, f"{viewer_url}/ui/#/run/{RUN}/episode/nope")
    assert "recorded no episode 'nope'" in await page.locator(".error").inner_text()
    assert httpx.get(f"{viewer_url}/ui/api/runs/..").status_code == 404
    assert httpx.get(f"{viewer_url}/ui/api/screenshots/{'0' * 64}.png").status_code == 404
    # The page's own fetches of a missing run answer 404: the console reports those, nothing else.
    assert all("404" in e for e in page.errors)


MCTS_RUN = "viewer-mcts"


@pytest.fixture(scope="module")
def mcts_folder(run_folder) -> tuple[Path, Tree]:
    """An MCTS run beside the GRPO one: its config and one search tree, node screenshots in the store."""
    root, shots, _ = run_folder
    store, folder = ScreenshotStore(shots), root / MCTS_RUN
    folder.mkdir()
    spec = RunSpec(domain="playground", algorithm="mcts")
    cfg = resolve(spec, MCTS_RUN, ["local.playground-1"], load_defaults(TrainerSettings().rl_config), "tiny")
    (folder / "config.json").write_text(json.dumps({"run": cfg.model_dump(mode="json"), "trainer": {}}))
    status = RunStatus(
        run_id=MCTS_RUN, state=RunState.FINISHED, spec=spec, created_at=1.0, updated_at=2.0, run_dir=str(folder)
    )
    (folder / "status.json").write_text(status.model_dump_json())
    tree = Tree.start(
        search_id=f"{MCTS_RUN}-j0",
        run_id=MCTS_RUN,
        task_id="local.playground-1",
        goal="Click the OK button.",
        sampling=cfg.sampling,
        alpha=0.5,
        ucb_c=1.414,
        state_ref="root",
        url="http://site.test/",
        screenshot_sha256=store.put(noise_png(640, 360, seed=20)),
    )
    win = tree.add_child(
        0,
        action=click(100),
        terminal=True,
        success=True,
        q_critic=0.8,
        screenshot_sha256=store.put(noise_png(640, 360, seed=21)),
    )
    miss = tree.add_child(
        0, action=click(300), state_ref="s1", q_critic=0.2, screenshot_sha256=store.put(noise_png(640, 360, seed=22))
    )
    tree.add_child(miss.id, action=click(500), terminal=True, success=False, q_critic=0.4)
    tree.backup(win.id, 1.0)
    tree.backup(miss.id, 0.0)
    tree.save(folder / "trees")
    return folder, tree


async def test_an_mcts_runs_search_tree_shows_its_nodes_best_path_and_pairs(page, viewer_url, mcts_folder):
    folder, tree = mcts_folder
    search_id = tree.record.search_id
    await open_view(page, f"{viewer_url}/ui/#/run/{MCTS_RUN}")
    await page.wait_for_selector(f'#trees tr[data-tree="{search_id}"]')
    await page.click(f'#trees tr[data-tree="{search_id}"] a')
    await page.wait_for_selector("#tree")
    await page.wait_for_function("window.haloViewer.ready")
    assert await page.locator("#tree li.node").count() == 4
    # the best path (root, then the most visited child: the success) is marked, the success green
    best = await page.eval_on_selector_all("#tree li.node.best", "els => els.map(e => e.dataset.node)")
    assert best == ["0", "1"] and tree.best_path() == [0, 1]
    assert await page.locator('#tree li.node.success[data-node="1"]').count() == 1
    # the pair the DPO step would train on, as Tree.preference_pairs gives it at the run's theta
    [pair] = tree.preference_pairs(0.1)
    assert await page.locator(f'#pairs tr[data-pair="{pair.chosen}>{pair.rejected}"]').count() == 1
    card = await page.locator('#tree li.node[data-node="2"] > .node-card').inner_text()
    assert "visits 1" in card and "q_critic 0.2" in card
    await page.wait_for_function(
        "[...document.querySelectorAll('#tree img.thumb')].every(i => i.complete && i.naturalWidth > 0)"
    )
    assert await page.locator("#tree img.thumb").count() == 3  # the unexpanded terminal leaf has no screenshot
    await page.screenshot(path=str(SHOTS / "viewer-tree.png"), full_page=True)
    await page.set_viewport_size(WINDOW)
    assert await layout_problems(page) == []
    assert page.errors == []
    assert httpx.get(f"{viewer_url}/ui/api/runs/{MCTS_RUN}/trees/..%2Fconfig").status_code == 404
    assert httpx.get(f"{viewer_url}/ui/api/runs/{MCTS_RUN}/trees/nope").status_code == 404


# --- at 1,280 px: a long run's page and a step group, as issue 48 found them ---------------------------
# A run of 25 updates and 200 recorded episodes on the 12 Playground tasks, with three metrics that
# never move (KL, staleness, action validity) and a step group of 8 candidates with long actions.
# Its screenshots are pages rendered in Chromium (a goal banner, a form, a button), so that the
# screenshots this test writes for docs/viewer.md show what a reader would see.
LONG_RUN = "viewer-long"
WINDOW = {"width": 1280, "height": 800}
TASKS = [f"local.playground-{i}" for i in range(1, 13)]
GROUP_ACTIONS = [
    ({"action": "left_click", "coordinate": [512, 290]}, "left_click(coordinate=[512, 290])"),
    ({"action": "double_click", "coordinate": [675, 1]}, "double_click(coordinate=[675, 1])"),
    ({"action": "double_click", "coordinate": [755, 855]}, "double_click(coordinate=[755, 855])"),
    ({"action": "right_click", "coordinate": [828, 923]}, "right_click(coordinate=[828, 923])"),
    (
        {"action": "type", "text": "a long answer the model typed into the search field, longer than any card"},
        "type(text='a long answer the model typed into the search field, longer than any card')",
    ),
    ({"action": "scroll", "coordinate": [500, 500], "pixels": -685}, "scroll(coordinate=[500, 500], pixels=-685)"),
    ({"action": "key", "keys": ["ctrl", "shift", "tab"]}, "key(keys=['ctrl', 'shift', 'tab'])"),
    ({"action": "terminate", "status": "success"}, "terminate(status='success')"),
]
PAGE_HTML = """<body style="margin:0;font:16px sans-serif">
<div style="background:#fff3b0;padding:10px 16px">Goal: click the Submit button (layout {n}).</div>
<form style="margin:{top}px 0 0 {left}px"><label>Name <input value="Ada"></label><br><br>
<button type="button" style="font-size:22px;padding:8px 24px;background:#2563eb;color:#fff;border:0">Submit</button></form></body>"""


def _rendered_pages(count: int) -> list[bytes]:
    """``count`` distinct 1280x720 screenshots of a small form, rendered in Chromium."""
    from playwright.async_api import async_playwright

    async def render() -> list[bytes]:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(DEFAULT_CHROMIUM_ARGS))
            page = await browser.new_page(viewport={"width": 1280, "height": 720})
            shots = []
            for n in range(count):
                await page.set_content(PAGE_HTML.format(n=n, top=60 + 90 * (n % 4), left=80 + 260 * (n % 3)))
                shots.append(await page.screenshot())
            await browser.close()
            return shots

    return asyncio.run(render())


def _long_metrics(update: int) -> dict[str, float]:
    wave = math.sin(update / 3)
    metrics = {
        "rollout/mean_reward": 0.1 + 0.02 * update + 0.05 * wave,
        "rollout/success_rate": min(1.0, 0.02 * update),
        "rollout/frac_reward_zero_std": 0.8 - 0.02 * update,
        "rollout/action_validity": 1.0,
        "rollout/episode_length": 2.5 + 0.4 * wave,
        "rollout/episodes_per_s": 0.17 + 0.01 * wave,
        "rollout/staleness": 0.0,
        "train/loss": -0.01 * wave,
        "train/kl": 0.0,
        "train/entropy": 0.8 - 0.01 * update,
        "train/grad_norm": 0.05 + 0.02 * abs(wave),
        "train/update_s": 20 + 3 * wave,
    }
    if update % 10 == 0 or update == 25:
        k = 4 if update >= 20 else 1
        metrics |= {"eval/success_rate": k / 32, "eval/ci_low": 0.0, "eval/ci_high": min(1.0, (k + 6) / 32)}
    return metrics


@pytest.fixture(scope="module")
def long_run(run_folder) -> tuple[Path, dict]:
    if not shutil.which(CHROMIUM):
        pytest.skip("Chromium is not installed")
    root, shots, template = run_folder
    folder, store = root / LONG_RUN, ScreenshotStore(shots)
    folder.mkdir()
    cfg = resolve(
        RunSpec(domain="playground", episodes=200), LONG_RUN, TASKS, load_defaults(TrainerSettings().rl_config), "tiny"
    )
    (folder / "config.json").write_text(json.dumps({"run": cfg.model_dump(mode="json"), "trainer": {}}))
    status = RunStatus(
        run_id=LONG_RUN,
        state=RunState.FINISHED,
        spec=RunSpec(domain="playground"),
        created_at=1.0,
        updated_at=2.0,
        episodes_done=200,
        episodes_total=200,
        updates=25,
        policy_version=25,
        run_dir=str(folder),
    )
    (folder / "status.json").write_text(status.model_dump_json())
    # Per-task counts as the loops write them (observe/task_counts.py): the "Success per task" table,
    # whose last column a 1,400-px window cut off.
    evals = []
    for update in (0, 10, 20, 25):
        tasks = {
            t: {"episodes": 3 if i < 8 else 2, "successes": int(update >= 20 and i == 0) * 3}
            for i, t in enumerate(TASKS)
        }
        k = sum(c["successes"] for c in tasks.values())
        evals.append(
            {
                "update": update,
                "time": update + 0.5,
                "eval/success_rate": k / 32,
                "eval/ci_low": 0.0,
                "eval/ci_high": 0.2,
                "tasks": tasks,
            }
        )
    (folder / "eval.jsonl").write_text("".join(json.dumps(line) + "\n" for line in evals))
    train_tasks = [
        {
            "update": u,
            "time": float(u),
            "tasks": {
                TASKS[u % 12]: {"episodes": 8, "successes": int(u > 12), "samples": 24, "sample_successes": u // 3}
            },
        }
        for u in range(1, 26)
    ]
    (folder / "train_tasks.jsonl").write_text("".join(json.dumps(line) + "\n" for line in train_tasks))
    log = MetricsLog(folder / "metrics.jsonl")
    for update in range(1, 26):
        log.write(update, update, _long_metrics(update), run_id=LONG_RUN)
    pages = [store.put(png) for png in _rendered_pages(9)]
    records = []
    for i in range(200):
        record = json.loads(json.dumps(template))
        purpose = "eval" if i % 5 == 0 else "train"
        record |= {
            "episode_id": f"{LONG_RUN}-e{i:03d}",
            "job_id": f"{LONG_RUN}-j{i:03d}",
            "task_id": TASKS[i % 12],
            "purpose": purpose,
            "update": i // 8,
            "policy_version": i // 8,
            "success": (i % 7 == 0) if purpose == "eval" else (None if i % 3 else i % 2 == 0),
        }
        for step in record["steps"]:
            step["screenshot"] = pages[i % 8]
            for candidate in step["candidates"]:
                candidate["next_screenshot"] = pages[(i + 1) % 8]
        records.append(record)
    # The step group of issue 48: 8 candidates at one state, their actions long enough to run together.
    group = records[-1]
    first = group["steps"][0]
    first["screenshot"] = pages[8]
    first["candidates"] = [
        {
            **first["candidates"][0],
            "action": action,
            "action_text": text,
            "kept": k == 0,
            "advantage": round(0.4 - 0.1 * k, 2),
            "next_screenshot": pages[k],
        }
        for k, (action, text) in enumerate(GROUP_ACTIONS)
    ]
    group["steps"] = [first]
    (folder / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder, group


async def _at_1280(page, url: str) -> None:
    await page.set_viewport_size(WINDOW)
    await open_view(page, url)


async def test_at_1280_the_run_page_fits_and_folds_its_flat_charts(page, viewer_url: str, long_run) -> None:
    await page.goto(f"{viewer_url}/ui/")
    await page.evaluate("localStorage.removeItem('haloSmoothing')")  # the default smoothing, whatever ran before
    await _at_1280(page, f"{viewer_url}/ui/#/run/{LONG_RUN}")
    assert await page.locator("#tasks tr.task-row").count() == 12  # the per-task table, all six columns in the window
    assert await layout_problems(page) == []
    groups = await page.eval_on_selector_all("section.chart-group", "els => els.map(e => e.dataset.group)")
    assert groups == ["learning", "rollouts", "system"]
    # The three metrics that never moved are folded (closed), each named with its one value.
    flat = await page.evaluate("window.haloViewer.flat")
    assert flat == {"train/kl": 0, "rollout/staleness": 0, "rollout/action_validity": 1}
    summaries = await page.locator("details.flat-charts:not([open]) summary").all_inner_texts()
    assert any("KL to the base 0" in s for s in summaries) and any("Action validity 1" in s for s in summaries)
    assert await page.locator('details.flat-charts [data-chart="train/kl"]').count() == 1
    assert not await page.locator('[data-chart="train/kl"]').is_visible()
    assert await page.locator('[data-chart="rollout/mean_reward"]').is_visible()
    # Raw points as in metrics.jsonl, and TensorBoard's smoothed line over them (default 0.6).
    lines = [json.loads(x) for x in (long_run[0] / "metrics.jsonl").read_text().splitlines()]
    raw, smooth = await page.evaluate(
        "() => { const c = window.haloViewer.charts['rollout/mean_reward']; return [c.chart.data[c.series], c.chart.data[c.chart.data.length - 1]]; }"
    )
    assert raw == pytest.approx([line["rollout/mean_reward"] for line in lines])
    expected, ema = [], 0.0
    for n, value in enumerate(raw, start=1):
        ema = 0.6 * ema + 0.4 * value
        expected.append(ema / (1 - 0.6**n))
    assert smooth == pytest.approx(expected)
    # The legend says the latest value, and the value under the cursor when hovering.
    legend = page.locator('[data-chart="rollout/mean_reward"] .legend')
    assert (await legend.inner_text()).startswith("latest") and f"{raw[-1]:.3g}" in await legend.inner_text()
    over = page.locator('[data-chart="rollout/mean_reward"] .u-over')
    box = await over.bounding_box()
    await page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)  # the first update's point
    assert "update 1" in await legend.inner_text() and f"{raw[0]:.3g}" in await legend.inner_text()
    await page.mouse.move(0, 0)
    await page.screenshot(path=str(SHOTS / "viewer-run-page.png"))
    # No smoothing: the raw series alone.
    await page.select_option("#smoothing", "0")
    assert await page.evaluate("window.haloViewer.charts['rollout/mean_reward'].chart.data.length") == 2
    assert page.errors == []


async def test_at_1280_the_episodes_are_paged_and_filtered(page, viewer_url: str, long_run) -> None:
    await _at_1280(page, f"{viewer_url}/ui/#/run/{LONG_RUN}")
    rows = page.locator("#episodes tr[data-episode]")
    assert await rows.count() == 25
    assert await page.locator("#episodes-range").inner_text() == "1-25 of 200"
    assert await rows.first.get_attribute("data-episode") == f"{LONG_RUN}-e199"  # newest first
    await page.click("#episodes-next")
    assert await page.locator("#episodes-range").inner_text() == "26-50 of 200"
    assert await rows.first.get_attribute("data-episode") == f"{LONG_RUN}-e174"
    await page.select_option("#episodes-purpose", "eval")  # a filter starts again at its first page
    assert await page.locator("#episodes-range").inner_text() == "1-25 of 40 (filtered from 200)"
    assert set(await page.locator("#episodes tr[data-episode] td:nth-child(2)").all_inner_texts()) == {"eval"}
    await page.select_option("#episodes-success", "yes")
    shown = await rows.evaluate_all("rows => rows.map(r => r.dataset.episode)")
    assert shown == [f"{LONG_RUN}-e{i:03d}" for i in range(195, -1, -5) if i % 7 == 0]
    await page.select_option("#episodes-task", TASKS[0])
    assert await rows.evaluate_all("rows => rows.map(r => r.dataset.episode)") == [
        f"{LONG_RUN}-e{i:03d}" for i in (180, 120, 60, 0) if i % 7 == 0
    ]
    assert await page.locator("#episodes-next").is_disabled() and await page.locator("#episodes-prev").is_disabled()
    assert await layout_problems(page) == []
    assert page.errors == []


async def test_at_1280_a_step_group_lays_its_candidates_in_a_legible_grid(page, viewer_url: str, long_run) -> None:
    _, group = long_run
    await _at_1280(page, f"{viewer_url}/ui/#/run/{LONG_RUN}/episode/{group['episode_id']}")
    await page.wait_for_function(
        "[...document.querySelectorAll('.fork img')].every(i => i.complete && i.naturalWidth > 0)"
    )
    assert await layout_problems(page) == []
    forks = page.locator(".forks .fork")
    assert await forks.count() == 8 and await page.locator(".fork.kept").count() == 1
    boxes = [await forks.nth(i).bounding_box() for i in range(8)]
    assert len({round(b["y"]) for b in boxes[:3]}) == 1  # at least three side by side
    images = page.locator(".forks .fork > img")
    assert min([(await images.nth(i).bounding_box())["width"] for i in range(8)]) >= 220  # was ~100 px
    # Each action's text stays inside its card, on as many lines as it needs, and no two touch.
    texts = [await forks.nth(i).locator(".action").bounding_box() for i in range(8)]
    for card, text in zip(boxes, texts, strict=True):
        assert card["x"] <= text["x"] and text["x"] + text["width"] <= card["x"] + card["width"]
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            apart = a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
            assert apart or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
    long_text = forks.nth(4).locator(".action")
    assert (await long_text.bounding_box())["height"] > 20  # wrapped onto more lines, not cut or spilled
    assert await long_text.inner_text() == GROUP_ACTIONS[4][1]
    await page.screenshot(path=str(SHOTS / "viewer-step-group.png"), full_page=True)
    # A click enlarges a screenshot over the page; Escape closes it.
    await images.nth(1).click()
    big = page.locator("#lightbox img")
    await big.wait_for()
    assert (await big.bounding_box())["width"] > 900
    assert await page.locator("#lightbox .caption").inner_text() == GROUP_ACTIONS[1][1]
    await page.keyboard.press("Escape")
    await page.locator("#lightbox").wait_for(state="detached")
    assert page.errors == []


async def test_at_1280_the_runs_page_and_the_compare_view_fit(page, viewer_url: str, long_run) -> None:
    await _at_1280(page, f"{viewer_url}/ui/")
    assert await page.locator(f'tr[data-run="{LONG_RUN}"] .badge').inner_text() == "finished"
    assert await layout_problems(page) == []
    await _at_1280(page, f"{viewer_url}/ui/#/compare/{RUN},{LONG_RUN}")
    await page.wait_for_selector("#compare-charts .chart canvas")
    assert await layout_problems(page) == []
    legend = await page.locator('#compare-charts [data-chart="rollout/mean_reward"] .legend').inner_text()
    assert RUN in legend and LONG_RUN in legend and "--" not in legend  # values, not uPlot's "update: --"
    assert "KL to the base 0" in await page.locator("#compare-charts details.flat-charts summary").inner_text()
    await page.screenshot(path=str(SHOTS / "viewer-compare-1280.png"), full_page=True)
    assert page.errors == []


def test_docs_viewer_md_shows_the_screenshots_these_tests_take() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "viewer.md").read_text()
    for name in ("viewer-run-page.png", "viewer-step-group.png", "viewer-compare-1280.png"):
        assert f"(img/{name})" in text, name
