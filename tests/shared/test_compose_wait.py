"""`make up`'s bounded wait (halo.cli.compose_wait) reading Docker's own container states.

The JSON files are `docker inspect` of real containers (Docker 20.10, cgroup v1), each put in one
state on purpose: running healthy, health starting (inside its start period), unhealthy, a
crash loop under `restart: unless-stopped` caught both while `restarting` and while running again
(RestartCount 8), one-shot steps that exited 0 and 2, a container created but not started, one
stopped by `docker stop` (what Compose does to a container it recreates), and two killed by a 64 MiB
memory limit (PID 1 itself, and a child of PID 1). The log lines are what the
policy launcher and vLLM print. The whole path, with Compose, is tests/compose/test_make_up_failures.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from halo.cli.compose_wait import (
    ContainerState,
    Watch,
    _instant,
    assess,
    cause_of,
    failure_line,
    starting_failure,
    summary_of,
)

DATA = Path(__file__).parent / "data" / "docker_inspect"
ROOT = Path(__file__).resolve().parents[2]


def state(name: str) -> ContainerState:
    (doc,) = json.loads((DATA / f"{name}.json").read_text())
    return ContainerState.from_inspect(doc)


def verdict(name: str, watch: Watch | None = None, max_failed_starts: int = 3):
    s = state(name)
    watch = watch or Watch.first_sight(s, before_up=False)
    watch.update(s)
    return assess(s, watch, max_failed_starts)


def test_docker_inspect_is_read_as_a_compose_container():
    healthy = state("healthy")
    assert (healthy.service, healthy.status, healthy.health, healthy.restart_policy) == (
        "redis",
        "running",
        "healthy",
        "unless-stopped",
    )
    assert not healthy.oneoff and healthy.name == "cw-healthy" and len(healthy.id) == 64
    assert state("unhealthy").health_output == "connection refused on 8100"
    loop = state("loop-restarting")
    assert (loop.status, loop.exit_code, loop.restart_count) == ("restarting", 2, 8)
    assert loop.health == "unhealthy"  # what Docker says while a container waits to restart
    assert state("created").health is None and state("oneshot").restart_policy == "no"


@pytest.mark.parametrize(
    ("name", "kind", "what"),
    [
        ("healthy", "ready", "healthy"),
        ("oneshot", "ready", "done (exited 0)"),
        ("starting", "pending", "running, health: starting"),
        ("created", "pending", "created, not started (waits for its dependencies)"),
        ("unhealthy", "failed", "is unhealthy: its healthcheck failed (last probe: connection refused on 8100)"),
        ("oneshot-failed", "failed", "exited 2"),
        ("oom-init", "failed", "was killed for memory (OOMKilled, exit 137)"),
        ("oom-child", "failed", "was killed for memory (OOMKilled, exit 1)"),
    ],
)
def test_each_state_is_ready_pending_or_a_failure(name: str, kind: str, what: str):
    v = verdict(name)
    assert (v.kind, v.what) == (kind, what)


def test_a_crash_loop_fails_after_the_set_number_of_failed_starts_although_docker_never_says_exited():
    # Seen for the first time by this wait, created by its `up`: every one of its 8 restarts counts.
    v = verdict("loop-restarting")
    assert (v.kind, v.what, v.loop) == ("failed", "exited 2 8 times at start", True)
    # Between two crashes it runs again, health "starting" and exit code 0: still the same loop.
    assert verdict("loop-running").kind == "failed"
    assert verdict("loop-restarting", max_failed_starts=9).kind == "pending"
    assert verdict("loop-restarting", max_failed_starts=9).what == "restarting, exited 2 8 times so far"


def test_failed_starts_count_from_this_wait_and_survive_docker_resetting_the_count():
    running, restarting = state("loop-running"), state("loop-restarting")
    # A second `make up` finds the container with 8 restarts behind it: none is this start's.
    watch = Watch.first_sight(running, before_up=True)
    assert watch.update(running) == 0 and assess(running, watch, 3).kind == "pending"
    # Docker resets RestartCount to 0 when Compose starts a container by hand; the 8 then seen are new.
    watch = Watch(restart_count=20)
    assert watch.update(restarting) == 8 and watch.exit_codes == [2]
    assert watch.update(restarting) == 0  # the same poll twice counts once


def test_a_container_compose_stops_to_recreate_is_not_a_failure_while_up_runs():
    stopped = state("stopped")
    watch = Watch.first_sight(stopped, before_up=False)
    watch.update(stopped)
    assert assess(stopped, watch, 2, up_running=True).kind == "pending"
    assert assess(stopped, watch, 2, up_running=False).what == "exited 137"  # and still stopped after `up`
    # A crash is one at once, `up` running or not; so is a kill for memory, whatever its exit code.
    for name in ("oneshot-failed", "oom-init"):
        s = state(name)
        assert assess(s, Watch.first_sight(s, before_up=False), 2, up_running=True).kind == "failed"


def test_when_compose_gives_up_the_service_failing_to_start_is_blamed():
    healthy, loop = state("healthy"), state("loop-running")
    watches = {s.id: Watch.first_sight(s, before_up=False) for s in (healthy, loop)}
    for s in (healthy, loop):
        watches[s.id].update(s)
    blamed, v = starting_failure([healthy, loop], watches)
    assert blamed.service == "policy" and v.loop and v.what == "exited 8 times at start"
    assert starting_failure([healthy], watches) is None


def test_a_run_that_ended_before_the_wait_is_not_a_failure_of_this_start():
    failed = state("oneshot-failed")
    watch = Watch.first_sight(failed, before_up=True)
    watch.update(failed)
    v = assess(failed, watch, 3)
    assert v.kind == "pending" and "before this wait began" in v.what


BAD_FLAG_LOG = [
    "2026-12-02 06:51:02,118 INFO policy halo.policy.server: starting vLLM (cpu target): python3 -m vllm...",
    "usage: api_server.py [-h] [--headless] [--api-server-count API_SERVER_COUNT]",
    "api_server.py: error: unrecognized arguments: --no-such-flag",
    "2026-12-02 06:51:21,530 ERROR policy halo.policy.server: policy server failed to start: vLLM exited with"
    " code 2 before becoming healthy",
    "--- last vLLM output ---",
    "usage: api_server.py [-h] [--headless] [--api-server-count API_SERVER_COUNT]",
    "api_server.py: error: unrecognized arguments: --no-such-flag",
]
TRACEBACK_LOG = [
    "(EngineCore pid=231) ERROR 12-02 06:55:40 [core.py:1001] EngineCore failed to start.",
    "(EngineCore pid=231) ERROR 12-02 06:55:40 [core.py:1001] Traceback (most recent call last):",
    '(EngineCore pid=231) ERROR 12-02 06:55:40 [core.py:1001]   File "/app/x.py", line 3, in <module>',
    "(EngineCore pid=231) ERROR 12-02 06:55:40 [core.py:1001] torch.OutOfMemoryError: CUDA out of memory. Tried to"
    " allocate 2.00 GiB. GPU 0 has a total capacity of 39.38 GiB",
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]


def test_the_cause_is_the_line_that_says_why():
    assert cause_of(BAD_FLAG_LOG) == "api_server.py: error: unrecognized arguments: --no-such-flag"
    assert summary_of(BAD_FLAG_LOG) == "policy server failed to start: vLLM exited with code 2 before becoming healthy"
    # The last exception raised, without vLLM's prefix (here vLLM's own wrapper around the root cause).
    assert cause_of(TRACEBACK_LOG).startswith("RuntimeError: Engine core initialization failed")
    assert cause_of(TRACEBACK_LOG[:4]).startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert cause_of(["Killed", "oom-kill: constraint=CONSTRAINT_MEMCG"]) == "oom-kill: constraint=CONSTRAINT_MEMCG"
    assert cause_of(["INFO all fine", ""]) == ""


def test_the_failure_is_one_line_naming_the_service_the_failure_and_the_cause():
    v = verdict("loop-restarting")
    line = failure_line("policy", v, BAD_FLAG_LOG, stopped_hint="; stopped it")
    assert line == (
        "error: policy exited 2 8 times at start: policy server failed to start: vLLM exited with code 2 before"
        " becoming healthy; api_server.py: error: unrecognized arguments: --no-such-flag; stopped it"
    )
    assert "\n" not in line
    assert failure_line("redis", verdict("oneshot-failed"), []).endswith(
        "(its log says nothing more; see its whole log)"
    )


def test_docker_timestamps_compare_as_times():
    # Docker trims trailing zeros of the fraction: as text, "...09.9Z" would sort after "...09.94Z".
    assert _instant("2026-12-02T06:43:09.9Z") > _instant("2026-12-02T06:43:09.89Z")
    assert _instant("2026-12-02T06:43:09.9Z") < _instant("2026-12-02T06:43:09.94Z")
    assert _instant("2026-12-02T06:43:10Z") > _instant("2026-12-02T06:43:09.999999999Z")


def test_the_module_runs_on_the_standard_library_alone_and_refuses_a_bad_command_line():
    # `python3 -I -S`: no site-packages, no PYTHONPATH, as on a GPU box's host without the .venv.
    script = ROOT / "shared" / "halo" / "cli" / "compose_wait.py"
    for args, said in (
        ([], "usage: compose_wait.py"),
        (["--timeout", "0", "--", "docker", "compose", "up", "-d"], "usage: compose_wait.py"),
    ):
        done = subprocess.run([sys.executable, "-I", "-S", str(script), *args], capture_output=True, text=True)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr
