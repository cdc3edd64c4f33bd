"""A run's start must not stall the trainer's event loop: the run loop's imports (torch,
transformers, peft) happen in a thread (``halo_trainer.api.runs.import_off_loop``).

Imported on the loop they stalled it for the whole import (4.8 s on a quiet 2-core machine, ~11 s
at load 10): the in-process workers' Redis reads timed out (redis-py's 5 s socket timeout) and the
env lease (10 s TTL, renewed on the same loop) expired. Measured in a fresh interpreter, where
nothing is imported yet, as a trainer is when its first run starts.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from halo.settings import REPO_ROOT

pytestmark = pytest.mark.slow

PROBE = """
import asyncio, json, time
from halo_trainer.api.runs import LOOP_MODULES, import_off_loop

async def main():
    gaps = []
    async def beat():
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.02)
            now = time.perf_counter()
            gaps.append(now - last - 0.02)
            last = now
    task = asyncio.create_task(beat())
    await asyncio.sleep(0.1)
    started = time.perf_counter()
    await import_off_loop()
    took = time.perf_counter() - started
    await asyncio.sleep(0.1)
    task.cancel()
    print(json.dumps({"import_s": took, "stall_s": max(gaps)}))

asyncio.run(main())
"""


def test_the_run_loops_imports_leave_the_event_loop_running() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\nrun-loop imports: {figures['import_s']:.2f} s; longest event-loop stall {figures['stall_s']:.2f} s")
    assert figures["import_s"] > 1.0, figures  # the imports were really done here (torch among them)
    # On the loop, the stall was the whole import; in a thread, the loop keeps answering: well under
    # the 5 s Redis socket timeout and the env lease's 10 s TTL (1.7 s measured at load 10).
    assert figures["stall_s"] < min(3.0, figures["import_s"] / 3), figures
