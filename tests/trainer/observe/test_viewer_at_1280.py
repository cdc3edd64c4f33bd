"""The run viewer in real Chromium at 1,280 x 800, on a long run beside the finished one (conftest.py):
the run page, the episodes' pages and filters, a step group, the runs page and the compare view.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from pathlib import Path

import pytest

from halo.schemas import RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.env import DEFAULT_CHROMIUM_ARGS
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import load_defaults, resolve
from halo_trainer.observe.metrics import MetricsLog
from tests.trainer.observe.viewer_page import CHROMIUM, RUN, SHOTS, WINDOW, open_view
from tests.trainer.viewer_layout import layout_problems

pytestmark = [pytest.mark.browser, pytest.mark.slow]


# --- at 1,280 px: a long run's page and a step group, as they were once found ---------------------------
# A run of 25 updates and 200 recorded episodes on the 12 Playground tasks, with three metrics that
# never move (KL, staleness, action validity) and a step group of 8 candidates with long actions.
# Its screenshots are pages rendered in Chromium (a goal banner, a form, a button), so that the
# screenshots this test writes for docs/viewer.md show what a reader would see.
LONG_RUN = "viewer-long"
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
    # The step group once found cut off: 8 candidates at one state, their actions long enough to run together.
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
