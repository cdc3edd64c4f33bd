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
from halo_trainer.mcts.tree import Tree
from halo_trainer.observe.episode_log import EpisodeLog
from halo_trainer.observe.filmstrip import MARKER, to_image_pixels
from halo_trainer.observe.metrics import MetricsLog
from halo_trainer.observe.viewer.__main__ import build_app
from halo_trainer.rollout.play import run_job
from tests.conftest import noise_png
from tests.trainer.serve_app import serve
from tests.trainer.stand_ins import click, job_for, services

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
    [record] = EpisodeLog(folder / "episodes.jsonl", 1, GroupMode.STEP, "dr_grpo").write(result, update=1)
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
    assert page.errors == []
    assert httpx.get(f"{viewer_url}/ui/api/runs/{MCTS_RUN}/trees/..%2Fconfig").status_code == 404
    assert httpx.get(f"{viewer_url}/ui/api/runs/{MCTS_RUN}/trees/nope").status_code == 404
