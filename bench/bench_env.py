"""Environment service: step latency through the service against direct in-process Playwright on the
same page (the ratio is the service's overhead), reset and fork latency, and sessions per GB.

Starts the offline clone server and the env service (default settings, one uvicorn worker each,
free ports, each in its own thread) in this process. Task: `local.gomail-1` (the GoMail clone).

- step, service: POST /sessions/{id}/step with a left_click on the first email's star (the page
  re-renders: a state change every step); the step includes the settle time (`settle_ms`), the
  accessibility-tree/state script, the screenshot and the HTTP round trip.
- step, direct: the same click on the same page opened by a bare Playwright context in this
  process, followed by a screenshot (the least any agent loop does), and a second variant that also
  waits `settle_ms` like the service.
- reset: POST /sessions (context from the pool, /config, first observation), one at a time.
- fork: POST /sessions/{id}/fork with n=4 (snapshot forks).
- memory: PSS of the pool's Chromium process trees with 1 and with K open sessions; sessions per
  GB = 1 GiB / the marginal memory of one more session.

    .venv/bin/python bench/bench_env.py [--steps 30] [--resets 10] [--sessions 8]

Writes bench/results/env.json and prints a summary. The machine's cores are shared with whatever
else runs: compare ratios, not absolute times, across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from halo.actions import from_pixels  # noqa: E402
from halo.schemas import Viewport  # noqa: E402
from halo.settings.env import EnvSettings  # noqa: E402
from halo.settings.sites import SitesSettings  # noqa: E402
from halo_env.app import create_app as create_env  # noqa: E402
from halo_sites.app import create_app as create_sites  # noqa: E402

TASK = "local.gomail-1"
STAR = "star-e01"
GIB = 1024**3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stats(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "p90_ms": round(ms[min(len(ms) - 1, int(0.9 * len(ms)))], 2),
        "min_ms": round(ms[0], 2),
    }


class _Thread:
    """An ASGI app on uvicorn in a thread of its own (its own event loop, like a separate process)."""

    def __init__(self, app: Any, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> _Thread:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


async def direct_steps(
    sites_url: str, settings: EnvSettings, steps: int, settle: bool
) -> tuple[list[float], list[int]]:
    """The same click on the same page in a bare Playwright context, plus a screenshot."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=settings.chromium_path or None, args=list(settings.chromium_args)
        )
        context = await browser.new_context(
            viewport={"width": settings.viewport_width, "height": settings.viewport_height}
        )
        page = await context.new_page()
        await page.goto(f"{sites_url}/gomail/config?run_id=bench&task_id={TASK}", wait_until="load")
        await page.wait_for_selector(f'[data-halo-id="{STAR}"]')
        box = await page.locator(f'[data-halo-id="{STAR}"]').bounding_box()
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            await page.mouse.click(x, y)
            if settle:
                await asyncio.sleep(settings.settle_ms / 1000)
            await page.screenshot(type="png")
            times.append((time.perf_counter() - t0) * 1000)
        await browser.close()
    return times, list(from_pixels((x, y), Viewport(width=settings.viewport_width, height=settings.viewport_height)))


def service_steps(http: httpx.Client, coordinate: list[int], steps: int) -> tuple[list[float], list[float]]:
    sid = http.post("/sessions", json={"task_id": TASK, "max_steps": steps + 5}).json()["observation"]["session_id"]
    http.post(f"/sessions/{sid}/step", json={"action": {"action": "wait", "time": 0}})  # warm the path
    wall, inside = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        r = http.post(f"/sessions/{sid}/step", json={"action": {"action": "left_click", "coordinate": coordinate}})
        wall.append((time.perf_counter() - t0) * 1000)
        r.raise_for_status()
        body = r.json()
        assert body["observation"]["last_action_error"] is None, body["observation"]["last_action_error"]
        inside.append(body["info"]["seconds"] * 1000)
    http.delete(f"/sessions/{sid}")
    return wall, inside


def resets(http: httpx.Client, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = http.post("/sessions", json={"task_id": TASK})
        times.append((time.perf_counter() - t0) * 1000)
        r.raise_for_status()
        http.delete(f"/sessions/{r.json()['observation']['session_id']}")
    return times


def forks(http: httpx.Client, n: int, repeats: int) -> list[float]:
    sid = http.post("/sessions", json={"task_id": TASK}).json()["observation"]["session_id"]
    http.post(f"/sessions/{sid}/step", json={"action": {"action": "left_click", "element_id": STAR}})
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = http.post(f"/sessions/{sid}/fork", json={"n": n})
        times.append((time.perf_counter() - t0) * 1000)
        r.raise_for_status()
        for child in r.json()["sessions"]:
            http.delete(f"/sessions/{child['observation']['session_id']}")
    http.delete(f"/sessions/{sid}")
    return times


def memory(http: httpx.Client, k: int) -> dict:
    def settle_read() -> int:
        time.sleep(1.0)  # let renderers finish their first paint and settle their heaps
        return http.get("/stats").json()["browser_memory_bytes"]

    ids = [http.post("/sessions", json={"task_id": TASK}).json()["observation"]["session_id"]]
    one = settle_read()
    for _ in range(k - 1):
        ids.append(http.post("/sessions", json={"task_id": TASK}).json()["observation"]["session_id"])
    many = settle_read()
    for sid in ids:
        http.delete(f"/sessions/{sid}")
    marginal = (many - one) / (k - 1)
    return {
        "sessions": k,
        "pss_one_session_mb": round(one / 2**20, 1),
        "pss_k_sessions_mb": round(many / 2**20, 1),
        "marginal_mb_per_session": round(marginal / 2**20, 1),
        "average_mb_per_session": round(many / k / 2**20, 1),
        "sessions_per_gb_marginal": round(GIB / marginal, 1) if marginal > 0 else None,
        "sessions_per_gb_average": round(GIB / (many / k), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--resets", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=8)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        sites_port, env_port = _free_port(), _free_port()
        with _Thread(create_sites(SitesSettings(host="127.0.0.1", port=sites_port)), sites_port) as sites:
            settings = EnvSettings(
                host="127.0.0.1",
                port=env_port,
                data_dir=Path(tmp),
                sites_url=sites.url,
                max_contexts_per_browser=max(16, args.sessions + 6),
                log_level="WARNING",
            )
            direct, coordinate = asyncio.run(direct_steps(sites.url, settings, args.steps, settle=False))
            direct_settled, _ = asyncio.run(direct_steps(sites.url, settings, args.steps, settle=True))
            with _Thread(create_env(settings), env_port) as env, httpx.Client(base_url=env.url, timeout=120) as http:
                wall, inside = service_steps(http, coordinate, args.steps)
                reset_ms = resets(http, args.resets)
                fork_ms = forks(http, 4, max(3, args.resets // 3))
                mem = memory(http, args.sessions)

    step_service, step_direct, step_direct_settled = _stats(wall), _stats(direct), _stats(direct_settled)
    results = {
        "task": TASK,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 1),  # other work on the machine inflates every time
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "settings": {"settle_ms": settings.settle_ms, "viewport": [settings.viewport_width, settings.viewport_height]},
        "step_service": step_service,
        "step_service_inside": _stats(inside),
        "step_direct_click_screenshot": step_direct,
        "step_direct_click_settle_screenshot": step_direct_settled,
        "step_ratio_service_vs_direct": round(step_service["median_ms"] / step_direct["median_ms"], 2),
        "step_ratio_service_vs_direct_settled": round(step_service["median_ms"] / step_direct_settled["median_ms"], 2),
        "reset": _stats(reset_ms),
        "fork_n4": _stats(fork_ms),
        "memory": mem,
    }
    out = ROOT / "bench" / "results" / "env.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")

    print(
        f"env service on {TASK} ({os.cpu_count()} CPUs, load average {results['machine']['load_average_1m']}),"
        f" results in {out.relative_to(ROOT)}"
    )
    print(f"  step via service      median {step_service['median_ms']:8.1f} ms  p90 {step_service['p90_ms']:8.1f} ms")
    print(
        f"  step direct (click+shot) median {step_direct['median_ms']:5.1f} ms  -> ratio {results['step_ratio_service_vs_direct']}"
    )
    print(
        f"  step direct (+settle)   median {step_direct_settled['median_ms']:5.1f} ms"
        f"  -> ratio {results['step_ratio_service_vs_direct_settled']}"
    )
    print(
        f"  reset                 median {results['reset']['median_ms']:8.1f} ms  p90 {results['reset']['p90_ms']:8.1f} ms"
    )
    print(f"  fork n=4              median {results['fork_n4']['median_ms']:8.1f} ms")
    print(
        f"  memory: {mem['marginal_mb_per_session']} MB per extra session (PSS) -> "
        f"{mem['sessions_per_gb_marginal']} sessions/GB marginal, {mem['sessions_per_gb_average']} average"
    )


if __name__ == "__main__":
    main()
