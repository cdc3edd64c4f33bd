"""The run viewer's fixtures: a finished run's folder as ``halo view`` loads it, the viewer serving it,
and a Chromium page on it (test modules that serve another app override ``viewer_url``).

The folder is written by the run's own writers (MetricsLog, EpisodeLog on rollout results of the
stand-in services, status.json as RunRegistry writes it), with real PNG screenshots in the store.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from halo.schemas import GroupMode, RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.env import DEFAULT_CHROMIUM_ARGS
from halo.settings.trainer import TrainerSettings
from halo_trainer.config import load_defaults, resolve
from halo_trainer.learner.batching import advantages_of
from halo_trainer.observe.episode_log import EpisodeLog
from halo_trainer.observe.metrics import MetricsLog
from halo_trainer.observe.viewer.__main__ import build_app
from halo_trainer.rollout.play import run_job
from tests.conftest import noise_png
from tests.trainer.observe.viewer_page import CHROMIUM, METRICS, RUN
from tests.trainer.serve_app import serve
from tests.trainer.stand_ins import job_for, services


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
