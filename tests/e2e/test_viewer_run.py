"""A short real run (Chromium, vLLM on the CPU, reward service, trainer) reported to TensorBoard and
watched in the trainer's viewer: what the page draws and what TensorBoard holds equal the run's files."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from halo.settings.env import DEFAULT_CHROMIUM_ARGS
from halo_trainer.observe.trackers import missing

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.vllm, pytest.mark.browser]
CHROMIUM = "/usr/bin/chromium"
# Each view's screenshot, for docs/viewer.md (copied to docs/img by hand when the page changes).
SHOTS = Path(os.environ.get("HALO_VIEWER_SHOTS", tempfile.gettempdir()))
RUN = {
    "domain": "playground",
    "tasks": ["local.playground-1"],
    "num_generations": 2,
    "max_steps": 2,
    "eval_every": 1,
    "eval_episodes": 1,
    "episodes": 4,
    "name": "viewer",
    "report_to": ["tensorboard"],
}


async def test_a_short_run_is_watched_in_the_viewer_and_in_tensorboard(stack) -> None:
    if missing(["tensorboard"]) or not shutil.which(CHROMIUM):
        pytest.skip("needs tensorboard and Chromium")
    from playwright.async_api import async_playwright
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with stack.api() as api:
        created = api.post("/runs", json=RUN)
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
    status = stack.wait_run(run_id, {"finished"})
    run_dir = Path(status["run_dir"])
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    records = [json.loads(x) for x in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert {r["purpose"] for r in records} == {"train", "eval"}

    acc = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    assert [i.step for i in acc.Images("eval/episode")] == [e["update"] for e in records if e["purpose"] == "eval"]
    for name in ("rollout/mean_reward", "train/grad_norm", "eval/success_rate"):
        logged = {e.step: e.value for e in acc.Scalars(name)}
        assert logged == pytest.approx({m["update"]: m[name] for m in lines if not math.isnan(m[name])}, rel=1e-6)

    viewer = f"{stack.url['trainer']}/ui/"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(DEFAULT_CHROMIUM_ARGS))
        page = await browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(viewer)
        await page.wait_for_function("window.haloViewer && window.haloViewer.ready")
        assert await page.locator(f'tr[data-run="{run_id}"]').count() == 1
        await page.screenshot(path=str(SHOTS / "viewer-runs.png"))
        await page.goto(f"{viewer}#/run/{run_id}")
        await page.wait_for_function("window.haloViewer.ready && window.haloViewer.charts['rollout/mean_reward']")
        drawn = await page.evaluate(
            "() => { const c = window.haloViewer.charts['rollout/mean_reward']; return [c.chart.data[0], c.chart.data[c.series]]; }"
        )
        points = [(m["update"], m["rollout/mean_reward"]) for m in lines if not math.isnan(m["rollout/mean_reward"])]
        assert [(x, y) for x, y in zip(*drawn, strict=True) if y is not None] == points
        await page.screenshot(path=str(SHOTS / "viewer-curves.png"), full_page=True)
        episode = next(r for r in records if r["purpose"] == "eval")
        await page.goto(f"{viewer}#/run/{run_id}/episode/{episode['episode_id']}")
        await page.wait_for_selector("#filmstrip")
        assert await page.locator("#filmstrip .frame").count() == len(episode["steps"])
        await page.wait_for_function(
            "[...document.querySelectorAll('#filmstrip img.shot')].every(i => i.complete && i.naturalWidth > 0)"
        )
        await page.screenshot(path=str(SHOTS / "viewer-episode.png"), full_page=True)
        train = next(r for r in records if r["purpose"] == "train")
        await page.goto(f"{viewer}#/run/{run_id}/episode/{train['episode_id']}")
        await page.wait_for_selector("#filmstrip")
        assert await page.locator(".fork").count() == sum(len(s["candidates"]) for s in train["steps"])
        await page.wait_for_function("[...document.querySelectorAll('.fork img')].every(i => i.complete)")
        await page.screenshot(path=str(SHOTS / "viewer-groups.png"), full_page=True)
        await browser.close()
    assert errors == []
