"""Offline clones: how long a reset, a state read, a screenshot and an evaluation take.

Starts the clone server in this process (one uvicorn worker, free port) and one headless Chromium,
then per site, `--repeats` times: /config until the app has rendered (a reset), the in-page
`window.__HALO__.finish()` (what the environment reads every step), the /finish page in a second
tab (what REAL's backend reads), a 1280x720 PNG screenshot; and `halo_sites.tasks.evaluate` on
every task of the site (agisdk's WebCloneEvaluator: one Python subprocess per script eval).
Everything shares the machine's cores with the load it measures.

    .venv/bin/python bench/bench_sites.py [--repeats 10]

Writes bench/results/sites.json and prints a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import ms_stats  # noqa: E402
from halo_sites.in_process import serving_clones  # noqa: E402
from halo_sites.tasks import evaluate, load_tasks, site_names  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


async def bench(repeats: int, chromium: str) -> dict:
    results: dict = {}
    async with serving_clones() as base, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium or None, args=ARGS)
        context = await browser.new_context(viewport={"width": 1280, "height": 720})
        page = await context.new_page()
        side = await context.new_page()
        for site in site_names():
            task = load_tasks(site)[0]
            timings: dict[str, list[float]] = {
                "reset": [],
                "finish_in_page": [],
                "finish_page": [],
                "screenshot": [],
            }
            state_bytes = 0
            for _ in range(repeats):
                t = time.perf_counter()
                await page.goto(f"{base}/{site}/config?task_id={task.id}&seed=0")
                await page.wait_for_url(f"{base}/{site}/**")
                await page.wait_for_load_state("load")
                timings["reset"].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                state = await page.evaluate("window.__HALO__.finish()")
                timings["finish_in_page"].append((time.perf_counter() - t) * 1000)
                state_bytes = len(json.dumps(state))
                t = time.perf_counter()
                await side.goto(f"{base}/{site}/finish")
                json.loads(await side.locator("pre").inner_text())
                timings["finish_page"].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                await page.screenshot()
                timings["screenshot"].append((time.perf_counter() - t) * 1000)
            evals = []
            evaluate(task, state, None)  # first call imports agisdk (about 1.5 s): not counted
            for t_ in load_tasks(site):
                t = time.perf_counter()
                evaluate(t_, state, None)
                evals.append((time.perf_counter() - t) * 1000)
            results[site] = {k: ms_stats(v) for k, v in timings.items()}
            results[site]["evaluate"] = ms_stats(evals)
            results[site]["finish_state_bytes"] = state_bytes
        await browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    results = asyncio.run(bench(args.repeats, args.chromium))
    out = {
        "bench": "sites",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "repeats": args.repeats,
        "sites": results,
    }
    path = ROOT / "bench" / "results" / "sites.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"offline clones ({os.cpu_count()} CPUs), medians in ms:")
    print(f"{'site':<12}{'reset':>8}{'finish()':>10}{'/finish':>9}{'shot':>8}{'evaluate':>10}{'state B':>9}")
    for site, r in results.items():
        print(
            f"{site:<12}{r['reset']['median_ms']:>8}{r['finish_in_page']['median_ms']:>10}"
            f"{r['finish_page']['median_ms']:>9}{r['screenshot']['median_ms']:>8}{r['evaluate']['median_ms']:>10}"
            f"{r['finish_state_bytes']:>9}"
        )
    print(f"written to {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
