"""A run survives its services' faults: vLLM killed and restarted, Chromium killed, a stop mid-run.

The real embedded stack (Redis, vLLM on the CPU, Chromium, reward, trainer), one per module. The
figures these tests measure are printed (run with ``-s``) and quoted in docs/trainer.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.e2e.test_training import SHORT_RUN

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.vllm, pytest.mark.browser]

OUTAGE_S = 60  # how long the policy server stays dead (issue 15's probe)


def _served(stack) -> set[str]:
    return {m["id"] for m in httpx.get(f"{stack.url['policy']}/v1/models", timeout=10).json()["data"]}


@pytest.fixture
def start_run(stack):
    """Creates a run (SHORT_RUN with the given fields) and stops it when the test ends, so a failed
    test leaves the trainer free for the next one."""
    created: list[str] = []

    def start(**fields) -> str:
        with stack.api() as api:
            response = api.post("/runs", json={**SHORT_RUN, **fields})
        assert response.status_code == 201, response.text
        created.append(response.json()["run_id"])
        return created[-1]

    yield start
    with stack.api() as api:
        for run_id in created:
            api.post(f"/runs/{run_id}/stop")
    for run_id in created:
        stack.wait_run(run_id, {"stopped", "finished"}, timeout_s=300)


def _kill_policy_server(stack) -> None:
    """``kill -9`` of vLLM itself: the launcher runs it in a process group of its own."""
    launcher = psutil.Process(stack.pid("policy"))
    groups = {os.getpgid(p.pid) for p in [launcher, *launcher.children(recursive=True)]}
    for group in groups:
        os.killpg(group, signal.SIGKILL)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{stack.url['policy']}/health", timeout=5)


def _is_browser(process: psutil.Process) -> bool:
    """A live Chromium browser process (not one of its renderers or helpers, which name a --type)."""
    try:
        return "chrom" in process.name().lower() and not any(a.startswith("--type=") for a in process.cmdline())
    except (psutil.ZombieProcess, psutil.NoSuchProcess):  # a child that exited meanwhile
        return False


def _status(stack, run_id: str) -> dict:
    with stack.api() as api:
        return api.get(f"/runs/{run_id}").json()


def test_policy_server_killed_for_60_s_and_restarted_the_run_reloads_its_adapter_and_finishes(stack, start_run):
    run_id = start_run(episodes=12, eval_every=0, name="vllm-outage")
    before = stack.wait_run(run_id, {"running"}, at_least_updates=1)
    _kill_policy_server(stack)
    killed_at = time.monotonic()
    time.sleep(OUTAGE_S)
    assert _status(stack, run_id)["state"] == "running"  # waiting, not failed
    restarted = stack.halo("stack", "up", "-s", "policy")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    ready_at = time.monotonic()
    # The restarted vLLM serves the base model only; the loop loads the run's current adapter again
    # (the version Redis names) before any new job samples, and before training goes on.
    current = None
    while time.monotonic() - ready_at < 300:
        status = _status(stack, run_id)
        current = status["adapter_name"]
        if current in _served(stack):
            break
        time.sleep(0.5)
    adapter_back_s = time.monotonic() - ready_at
    assert current in _served(stack), f"{current} not loaded again: {_served(stack)}"
    assert status["updates"] == before["updates"] or status["policy_version"] > before["policy_version"]
    resumed = stack.wait_run(run_id, {"running", "finished"}, at_least_updates=before["updates"] + 1)
    first_update_s = time.monotonic() - ready_at
    status = stack.wait_run(run_id, {"finished"})
    assert status["episodes_done"] == 12 and status["updates"] == 3 and status["policy_version"] == 3
    assert f"{run_id}-v3" in _served(stack)
    assert status["latest_metrics"]["rollout/infra_failed_jobs"] >= 1  # jobs in flight at the kill were replaced
    run_dir = Path(status["run_dir"])
    versions = [json.loads(x)["policy/version"] for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert versions == [1.0, 2.0, 3.0]  # the run went on from its version; nothing started over
    log = (stack.data_dir / "stack" / "logs" / "trainer.log").read_text()
    assert f"adapter {current} loaded into vLLM" in log
    print(
        f"\nvLLM outage: killed at update {before['updates']} (v{before['policy_version']}), restarted after "
        f"{ready_at - killed_at:.0f} s; adapter {current} back {adapter_back_s:.1f} s after vLLM was ready; "
        f"first update {first_update_s:.1f} s after (update {resumed['updates']})"
    )


def test_browser_killed_mid_run_the_run_continues(stack, start_run):
    """The env side is tests/env/test_resilience.py; here the run goes on through the crash."""
    run_id = start_run(episodes=8, eval_every=0, name="chromium")
    stack.wait_run(run_id, {"running"}, at_least_updates=1)
    env = psutil.Process(stack.pid("env"))
    browsers = [p for p in env.children(recursive=True) if _is_browser(p)]
    assert browsers, "no Chromium under the env service"
    for browser in browsers:
        with contextlib.suppress(psutil.NoSuchProcess):  # one that exited meanwhile is gone already
            browser.send_signal(signal.SIGKILL)
    status = stack.wait_run(run_id, {"finished"})
    assert status["episodes_done"] == 8 and status["updates"] == 2
    assert httpx.get(f"{stack.url['env']}/stats", timeout=10).json()["browsers_lost"] >= 1


def test_a_stopped_run_drops_its_jobs_closes_its_sessions_and_its_event_stream(stack, start_run):
    run_id = start_run(episodes=400, max_steps=6, name="stop")
    with stack.api() as api:
        stack.wait_run(run_id, {"running"}, at_least_updates=1)
        assert api.post(f"/runs/{run_id}/stop").status_code == 200
        stopped_at = time.monotonic()
        events = api.get(f"/runs/{run_id}/events", timeout=300).text  # closes on its own
    closed_s = time.monotonic() - stopped_at
    last = events.strip().split("\n\n")[-1]
    assert last.startswith("event: done") and '"stopped"' in last
    # The jobs in flight were abandoned at their next step: no browser session stays open.
    deadline = time.monotonic() + 120
    while (sessions := httpx.get(f"{stack.url['env']}/stats", timeout=10).json()["sessions"]) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.5)
    assert sessions == 0
    idle_s = time.monotonic() - stopped_at
    results_before = _status(stack, run_id)
    time.sleep(5)
    assert _status(stack, run_id)["episodes_done"] == results_before["episodes_done"]
    with stack.api() as api:  # a stream opened after the end closes at once
        again = api.get(f"/runs/{run_id}/events", timeout=30).text
    assert again.strip().split("\n\n")[-1].startswith("event: done")
    print(f"\nstop: event stream closed {closed_s:.1f} s after the stop; env sessions 0 after {idle_s:.1f} s")
