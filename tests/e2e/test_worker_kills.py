"""Extra rollout workers killed repeatedly during a real run: the run finishes with every episode
counted once, each killed worker's browser sessions are closed by the env when its session lease
expires (measured), and the env's session count returns to the live jobs' sessions.

The real embedded stack (Redis, vLLM on the CPU, Chromium, reward, trainer). The figures are printed
(run with ``-s``) and quoted in docs/env.md and docs/trainer.md.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest
import redis

from tests.e2e.conftest import ROOT
from tests.e2e.test_training import SHORT_RUN

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.vllm, pytest.mark.browser, pytest.mark.release]

KILLS = 5
EPISODES = 24
LEASE_TTL_S = 10.0  # EnvSettings.lease_ttl_s's default, which the stack runs with


def _worker(stack) -> subprocess.Popen:
    """``python -m halo_trainer.worker`` beside the trainer, as an operator adds capacity."""
    return subprocess.Popen(
        [sys.executable, "-m", "halo_trainer.worker"],
        env={**stack.env, "HALO_WORKERS": "1", "HALO_LOG_LEVEL": "WARNING"},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _env(stack, path: str):
    return httpx.get(f"{stack.url['env']}{path}", timeout=10).json()


def _sessions_of(stack, pid: int) -> set[str]:
    """The open sessions of the worker process ``pid`` (its lease's owner label ends in its pid)."""
    leases = {le["lease_id"] for le in _env(stack, "/leases") if le["owner"].endswith(f"-{pid}")}
    return {s["session_id"] for s in _env(stack, "/sessions") if s["lease_id"] in leases}


def _status(stack, run_id: str) -> dict:
    with stack.api() as api:
        return api.get(f"/runs/{run_id}").json()


def test_extra_workers_killed_repeatedly_the_run_finishes_and_no_browser_context_leaks(stack):
    with stack.api() as api:
        body = {**SHORT_RUN, "episodes": EPISODES, "eval_every": 0, "name": "worker-kills"}
        created = api.post("/runs", json=body)
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
    workers = [_worker(stack), _worker(stack)]
    released_s: list[float] = []
    done_at_kill = -1
    try:
        while len(released_s) < KILLS and _status(stack, run_id)["state"] in ("queued", "running"):
            # One kill per bit of progress: killing every worker that picks up the same reclaimed
            # job would dead-letter it after job_max_deliveries, which is a different test.
            while (now := _status(stack, run_id))["episodes_done"] <= done_at_kill and now["state"] == "running":
                time.sleep(1)
            # Wait for an extra worker that holds browser sessions, then kill it mid-job.
            victim, held = None, set()
            deadline = time.monotonic() + 120
            while victim is None and time.monotonic() < deadline:
                for proc in workers:
                    held = _sessions_of(stack, proc.pid)
                    if held:
                        victim = proc
                        break
                else:
                    if _status(stack, run_id)["state"] not in ("queued", "running"):
                        break
                    time.sleep(0.3)
            if victim is None:
                break
            victim.kill()  # SIGKILL: no lease release, no job acknowledgement
            killed_at = time.monotonic()
            done_at_kill = _status(stack, run_id)["episodes_done"]
            victim.wait()
            workers.remove(victim)
            workers.append(_worker(stack))  # capacity comes back, as a supervisor would restart it
            while time.monotonic() - killed_at < LEASE_TTL_S + 20:
                if not held & {s["session_id"] for s in _env(stack, "/sessions")}:
                    break
                time.sleep(0.2)
            left = held & {s["session_id"] for s in _env(stack, "/sessions")}
            assert not left, f"a killed worker's sessions are still open after {time.monotonic() - killed_at:.1f} s"
            released_s.append(time.monotonic() - killed_at)
        assert len(released_s) >= 3, f"only {len(released_s)} workers were killed while holding sessions"
        status = stack.wait_run(run_id, {"finished"}, timeout_s=1500)
    finally:
        for proc in workers:
            proc.kill()
            proc.wait()

    # Every episode counted once: one episode per job here, each job's result used exactly once.
    assert status["episodes_done"] == EPISODES and status["updates"] == EPISODES // 4
    client = redis.Redis.from_url(stack.redis_url)
    assert len(list(client.scan_iter(f"halo:run:{run_id}:results:done:*"))) == EPISODES  # jobs marked used
    assert client.xpending(f"halo:run:{run_id}:results", "learner")["pending"] == 0

    # No browser context leaked: with the run over no job is live, so the env's session count goes
    # back to zero (the last killed workers' leases expire) and every context is free again.
    deadline = time.monotonic() + LEASE_TTL_S + 20
    while time.monotonic() < deadline and _env(stack, "/stats")["sessions"] != 0:
        time.sleep(0.5)
    stats = _env(stack, "/stats")
    assert stats["sessions"] == 0 and stats["contexts_in_use"] == 0, stats
    print(
        f"\n{len(released_s)} extra workers SIGKILLed mid-job; their sessions closed "
        f"{min(released_s):.1f}-{max(released_s):.1f} s after the kill (lease ttl {LEASE_TTL_S:g} s); "
        f"run finished with {status['episodes_done']} episodes in {status['updates']} updates"
    )
