"""Environment service: what entering, re-entering and stepping a browser state costs, against raw
Playwright on the same page (as ratios), on a light page (Playground) and a heavy one (GoMail).

Starts the offline clone server and the env service (default settings, one uvicorn worker each, free
ports, each in its own thread) in this process. Per page, medians of ``--repeats``:

- raw relaunch: launch Chromium + new page + goto the task's /config + screenshot (then close).
- raw new context: in a running browser, new context + goto /config + screenshot.
- reset, setup: POST /sessions for a run id not seen before (the site's /config in a warm context).
- reset, rewind: POST /sessions again for the same task, seed and run id, with a parked page free
  (a closed session's context kept at the app): its reset state rewound in place.
- re-entry: POST /sessions/{id}/fork n=1 with method snapshot (fresh context, storage seeded, app
  loaded) and rewind (a parked page rewound), and POST /sessions/restore of the session's snapshot
  (which rewinds too). Children are closed between repeats (so they park).
- step: one action through the service, against the same action done directly (click + the same
  settle + screenshot) in a bare Playwright page of the same clone.
- step group N=8: fork n=7, then the 8 sessions step concurrently (what a rollout worker does for
  one GRPO group: each answer carries the observation and site state the reward is computed from),
  then the 7 forks close; against eight plain steps, one after another in the same session, timed
  just before each group (so both see the same load; ``--group-repeats`` pairs, after one group
  that parks the pages). ``group8_vs_eight_step_medians`` is the older figure, against 8 x the
  step median measured minutes earlier.
- memory: PSS of the pool's Chromium trees with 1 and with K sessions (GoMail); sessions per GB.

    .venv/bin/python bench/bench_env.py [--repeats 8] [--steps 20] [--sessions 8] [--group-repeats 6]

Writes bench/results/env.json (with the ratios and the goals) and prints a summary. The machine's
cores are shared with whatever else runs: compare ratios, not absolute times, across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
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

from bench.measure import free_port, ms_stats  # noqa: E402
from halo.actions import from_pixels  # noqa: E402
from halo.schemas import Viewport  # noqa: E402
from halo.settings.env import EnvSettings  # noqa: E402
from halo.settings.sites import SitesSettings  # noqa: E402
from halo_env.app import create_app as create_env  # noqa: E402
from halo_sites.app import create_app as create_sites  # noqa: E402

GIB = 1024**3
STAR = "star-e01"
# name -> (task, the step's action: a fixed point on the page, as pixels)
PAGES = {
    "playground": ("local.playground-6", (128, 684)),  # a type task; the click lands on the page's empty lower left
    "gomail": ("local.gomail-1", None),  # the first email's star (found at run time): re-renders every step
}
GOALS = {
    "reentry_vs_relaunch": 0.1,
    "reset_vs_relaunch": 0.5,
    "step_vs_direct_settled": 1.1,
    "group8_vs_eight_steps": 1.5,
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


async def raw_page(
    sites_url: str, settings: EnvSettings, task: str, point: tuple[float, float] | None, repeats: int, steps: int
) -> dict:
    """Raw Playwright on the task's page: relaunch, new context, and direct steps (with and without settle)."""
    site = task.split(".", 1)[1].rsplit("-", 1)[0]
    config = f"{sites_url}/{site}/config?run_id=bench&task_id={task}"
    launch = {"executable_path": settings.chromium_path or None, "args": list(settings.chromium_args)}
    viewport = {"width": settings.viewport_width, "height": settings.viewport_height}
    async with async_playwright() as pw:
        relaunch = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            browser = await pw.chromium.launch(**launch)
            page = await (await browser.new_context(viewport=viewport)).new_page()
            await page.goto(config, wait_until="load")
            await page.screenshot(type="png")
            relaunch.append((time.perf_counter() - t0) * 1000)
            await browser.close()
        browser = await pw.chromium.launch(**launch)
        new_context = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            context = await browser.new_context(viewport=viewport)
            page = await context.new_page()
            await page.goto(config, wait_until="load")
            await page.screenshot(type="png")
            new_context.append((time.perf_counter() - t0) * 1000)
            await context.close()
        page = await (await browser.new_context(viewport=viewport)).new_page()
        await page.goto(config, wait_until="load")
        if point is None:
            box = await page.locator(f'[data-halo-id="{STAR}"]').bounding_box()
            assert box is not None
            point = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        direct: dict[str, list[float]] = {"click_screenshot": [], "click_settle_screenshot": []}
        for settle in (False, True):
            for _ in range(steps):
                t0 = time.perf_counter()
                await page.mouse.click(*point)
                if settle:
                    await asyncio.sleep(settings.settle_ms / 1000)
                await page.screenshot(type="png")
                direct["click_settle_screenshot" if settle else "click_screenshot"].append(
                    (time.perf_counter() - t0) * 1000
                )
        await browser.close()
    coordinate = list(from_pixels(point, Viewport(width=settings.viewport_width, height=settings.viewport_height)))
    return {"relaunch": relaunch, "new_context": new_context, **direct, "coordinate": coordinate}


def _timed(call: Any, *args: Any, **kwargs: Any) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    r = call(*args, **kwargs)
    ms = (time.perf_counter() - t0) * 1000
    r.raise_for_status()
    return ms, r


def _click(coordinate: list[int]) -> dict:
    return {"action": {"action": "left_click", "coordinate": coordinate}}


def service_page(http: httpx.Client, task: str, coordinate: list[int], repeats: int, steps: int) -> dict:
    """Resets, re-entries and steps through the env service on one task."""
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "reset_setup",
            "reset_rewind",
            "fork_snapshot",
            "fork_rewind",
            "restore_rewind",
            "step",
            "step_inside",
        )
    }
    methods: dict[str, set[str]] = {k: set() for k in out}
    close = lambda sid: http.delete(f"/sessions/{sid}")  # noqa: E731
    for i in range(repeats):
        ms, r = _timed(http.post, "/sessions", json={"task_id": task, "run_id": f"bench-{i}"})
        out["reset_setup"].append(ms)
        methods["reset_setup"].add(r.json()["info"]["method"])
        close(r.json()["observation"]["session_id"])  # parks its page for the rewinds below
    for _ in range(repeats):
        ms, r = _timed(http.post, "/sessions", json={"task_id": task, "run_id": "bench-0"})
        out["reset_rewind"].append(ms)
        methods["reset_rewind"].add(r.json()["info"]["method"])
        close(r.json()["observation"]["session_id"])
    sid = http.post("/sessions", json={"task_id": task, "run_id": "bench-0", "max_steps": steps + 5}).json()[
        "observation"
    ]["session_id"]
    http.post(f"/sessions/{sid}/step", json=_click(coordinate)).raise_for_status()
    for method in ("snapshot", "rewind"):
        for _ in range(repeats):
            ms, r = _timed(http.post, f"/sessions/{sid}/fork", json={"n": 1, "method": method})
            out[f"fork_{method}"].append(ms)
            methods[f"fork_{method}"].add(r.json()["method"])
            close(r.json()["sessions"][0]["observation"]["session_id"])
    snapshot = http.get(f"/sessions/{sid}/snapshot").json()
    for _ in range(repeats):
        ms, r = _timed(http.post, "/sessions/restore", json=snapshot)
        out["restore_rewind"].append(ms)
        methods["restore_rewind"].add(r.json()["info"]["method"])
        close(r.json()["observation"]["session_id"])
    for _ in range(steps):
        ms, r = _timed(http.post, f"/sessions/{sid}/step", json=_click(coordinate))
        assert r.json()["observation"]["last_action_error"] is None, r.json()["observation"]["last_action_error"]
        out["step"].append(ms)
        out["step_inside"].append(r.json()["info"]["seconds"] * 1000)
    close(sid)
    return {"times": out, "methods": {k: sorted(v) for k, v in methods.items() if v}}


async def step_groups(
    base_url: str, task: str, coordinate: list[int], repeats: int, n: int = 8
) -> tuple[list[float], list[str], list[float]]:
    """Fork n-1, step all n concurrently, close the forks: one GRPO step group; and, just before
    each group, n plain steps one after another in the same session (the goal's "eight plain
    steps", measured beside each group so both see the same load). One group first, not counted,
    parks the pages the others rewind."""
    times, methods, plain = [], [], []
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as http:
        r = await http.post("/sessions", json={"task_id": task, "run_id": "bench-0", "max_steps": (repeats + 1) * 10})
        sid = r.json()["observation"]["session_id"]

        async def group() -> tuple[float, str]:
            t0 = time.perf_counter()
            fork = (await http.post(f"/sessions/{sid}/fork", json={"n": n - 1})).json()
            ids = [sid] + [c["observation"]["session_id"] for c in fork["sessions"]]
            answers = await asyncio.gather(*(http.post(f"/sessions/{s}/step", json=_click(coordinate)) for s in ids))
            assert all(a.status_code == 200 and a.json()["observation"]["site_state"] is not None for a in answers)
            await asyncio.gather(*(http.delete(f"/sessions/{s}") for s in ids[1:]))
            return (time.perf_counter() - t0) * 1000, fork["method"]

        await group()
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(n):
                (await http.post(f"/sessions/{sid}/step", json=_click(coordinate))).raise_for_status()
            plain.append((time.perf_counter() - t0) * 1000)
            ms, method = await group()
            times.append(ms)
            methods.append(method)
        await http.delete(f"/sessions/{sid}")
    return times, sorted(set(methods)), plain


def memory(http: httpx.Client, task: str, k: int) -> dict:
    def settle_read() -> int:
        time.sleep(1.0)  # let renderers finish their first paint and settle their heaps
        return http.get("/stats").json()["browser_memory_bytes"]

    # Run ids never seen: every session is a /config reset in a fresh context (no parked page), so
    # the parked pages (there in both readings) do not enter the marginal figure.
    def new_session(i: int) -> str:
        r = http.post("/sessions", json={"task_id": task, "run_id": f"memory-{i}"})
        return r.json()["observation"]["session_id"]

    ids = [new_session(0)]
    one = settle_read()
    for i in range(1, k):
        ids.append(new_session(i))
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


def _ratios(page: dict) -> dict:
    med = lambda name: page[name]["median_ms"]  # noqa: E731
    best_reentry = min(med("fork_rewind"), med("restore_rewind"))
    return {
        "reentry_vs_relaunch": round(best_reentry / med("raw_relaunch"), 3),
        "reentry_snapshot_vs_relaunch": round(med("fork_snapshot") / med("raw_relaunch"), 3),
        "reset_vs_relaunch": round(med("reset_rewind") / med("raw_relaunch"), 3),
        "reset_setup_vs_relaunch": round(med("reset_setup") / med("raw_relaunch"), 3),
        "step_vs_direct_settled": round(med("step_service") / med("step_direct_click_settle_screenshot"), 3),
        "step_vs_direct": round(med("step_service") / med("step_direct_click_screenshot"), 3),
        "group8_vs_eight_steps": round(med("group_n8") / med("eight_plain_steps"), 3),
        "group8_vs_eight_step_medians": round(med("group_n8") / (8 * med("step_service")), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--group-repeats", type=int, default=6, help="step groups (each beside 8 plain steps)")
    args = parser.parse_args()

    pages: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sites_port, env_port = free_port(), free_port()
        with _Thread(
            create_sites(SitesSettings(host="127.0.0.1", port=sites_port, log_level="WARNING")), sites_port
        ) as sites:
            settings = EnvSettings(
                host="127.0.0.1",
                port=env_port,
                data_dir=Path(tmp),
                sites_url=sites.url,
                max_contexts_per_browser=max(16, args.sessions + 6),
                log_level="WARNING",
            )
            raw = {
                name: asyncio.run(raw_page(sites.url, settings, task, point, args.repeats, args.steps))
                for name, (task, point) in PAGES.items()
            }
            with _Thread(create_env(settings), env_port) as env, httpx.Client(base_url=env.url, timeout=120) as http:
                for name, (task, _) in PAGES.items():
                    coordinate = raw[name]["coordinate"]
                    svc = service_page(http, task, coordinate, args.repeats, args.steps)
                    group, group_methods, eight_steps = asyncio.run(
                        step_groups(env.url, task, coordinate, args.group_repeats)
                    )
                    t = svc["times"]
                    page = {
                        "task": task,
                        "raw_relaunch": ms_stats(raw[name]["relaunch"]),
                        "raw_new_context": ms_stats(raw[name]["new_context"]),
                        "reset_setup": ms_stats(t["reset_setup"]),
                        "reset_rewind": ms_stats(t["reset_rewind"]),
                        "fork_snapshot": ms_stats(t["fork_snapshot"]),
                        "fork_rewind": ms_stats(t["fork_rewind"]),
                        "restore_rewind": ms_stats(t["restore_rewind"]),
                        "step_service": ms_stats(t["step"]),
                        "step_service_inside": ms_stats(t["step_inside"]),
                        "step_direct_click_screenshot": ms_stats(raw[name]["click_screenshot"]),
                        "step_direct_click_settle_screenshot": ms_stats(raw[name]["click_settle_screenshot"]),
                        "group_n8": ms_stats(group),
                        "eight_plain_steps": ms_stats(eight_steps),
                        "methods_used": {**svc["methods"], "group_n8": group_methods},
                    }
                    page["ratios"] = _ratios(page)
                    pages[name] = page
                mem = memory(http, PAGES["gomail"][0], args.sessions)
                parked = http.get("/stats").json()["contexts_parked"]

    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 1),  # other work on the machine inflates every time
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "settings": {
            "settle_ms": settings.settle_ms,
            "viewport": [settings.viewport_width, settings.viewport_height],
            "parked_contexts": settings.parked_contexts,
            "repeats": args.repeats,
            "steps": args.steps,
            "group_repeats": args.group_repeats,
        },
        "goals": GOALS,
        "pages": pages,
        "goals_met": {
            name: {goal: page["ratios"][goal] <= limit for goal, limit in GOALS.items()} for name, page in pages.items()
        },
        "memory": {**mem, "contexts_parked_at_end": parked},
    }
    out = ROOT / "bench" / "results" / "env.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")

    print(
        f"env service ({os.cpu_count()} CPUs, load average {results['machine']['load_average_1m']}), results in {out.relative_to(ROOT)}"
    )
    for name, page in pages.items():
        print(f"  {name} ({page['task']})")
        for key in (
            "raw_relaunch",
            "raw_new_context",
            "reset_setup",
            "reset_rewind",
            "fork_snapshot",
            "fork_rewind",
            "restore_rewind",
            "step_service",
            "step_direct_click_settle_screenshot",
            "group_n8",
            "eight_plain_steps",
        ):
            print(f"    {key:38s} median {page[key]['median_ms']:8.1f} ms  p90 {page[key]['p90_ms']:8.1f} ms")
        for goal, value in page["ratios"].items():
            limit = GOALS.get(goal)
            verdict = "" if limit is None else f"(goal <= {limit}: {'met' if value <= limit else 'NOT met'})"
            print(f"    {goal:38s} {value:8.3f} {verdict}")
    print(
        f"  memory: {mem['marginal_mb_per_session']} MB per extra session (PSS) -> "
        f"{mem['sessions_per_gb_marginal']} sessions/GB marginal, {mem['sessions_per_gb_average']} average"
    )


if __name__ == "__main__":
    main()
