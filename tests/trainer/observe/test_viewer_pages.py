"""The run viewer's pages in real Chromium, on a finished run's folder (conftest.py): the runs list,
the curves, an episode's filmstrip, clear pages for bad ids, and an MCTS run's search tree.

The same pages at 1,280 px on a long run: test_viewer_at_1280.py.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import httpx
import pytest
from PIL import Image

from halo.schemas import RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import load_defaults, resolve
from halo_trainer.mcts.tree import Tree
from halo_trainer.observe.filmstrip import MARKER, to_image_pixels
from tests.conftest import noise_png
from tests.trainer.observe.viewer_page import RUN, SHOTS, WINDOW, open_view
from tests.trainer.stand_ins import click
from tests.trainer.viewer_layout import layout_problems

pytestmark = [pytest.mark.browser, pytest.mark.slow]


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
