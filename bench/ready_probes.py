"""The trainer's /ready and a /health sent while it runs, with its dependency probes made as today
(one shared HTTP client) and as before (a new client per check per call, which loads the CA bundle
on the event loop). Dependencies are a local HTTP server answering 200, so only the trainer's own
cost is measured. Prints one line per variant; figures in docs/stack.md.

    .venv/bin/python bench/ready_probes.py [--calls 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import httpx
from fastapi import FastAPI

from halo.service import add_health_routes
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.app import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests' stand-ins
from tests.http_stub import OkHandler, ServedInThread


def _client_per_check(url: str):
    async def check() -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            (await client.get(url)).raise_for_status()

    return check


async def _measure(app: FastAPI, calls: int) -> tuple[list[float], list[float]]:
    ready, health = [], []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer") as client:
        for _ in range(calls):
            started = time.perf_counter()
            pending = asyncio.create_task(client.get("/ready"))
            await asyncio.sleep(0.01)  # /ready is under way: how long does /health wait for the loop?
            t = time.perf_counter()
            await client.get("/health")
            health.append(time.perf_counter() - t)
            assert (await pending).status_code == 200
            ready.append(time.perf_counter() - started)
    return ready, health


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    dependency = ServedInThread(OkHandler).__enter__()  # lives as long as the process
    dep = dependency.url
    today = create_app(TrainerSettings(env_url=dep, reward_url=dep, policy_url=dep))
    before = FastAPI()
    add_health_routes(before, "trainer", {n: _client_per_check(f"{dep}/ready") for n in ("env", "reward", "policy")})
    t = time.perf_counter()
    for _ in range(5):
        httpx.AsyncClient()
    make_s = (time.perf_counter() - t) / 5
    print(f"load average {os.getloadavg()[0]:.1f}; making one httpx.AsyncClient: {make_s:.3f} s")
    for name, app in (("client per check (before)", before), ("one shared client (today)", today)):
        ready, health = asyncio.run(_measure(app, args.calls))
        print(
            f"{name}: /ready median {statistics.median(ready):.3f} s, max {max(ready):.3f} s; "
            f"/health during it median {statistics.median(health):.3f} s, max {max(health):.3f} s"
        )


if __name__ == "__main__":
    main()
