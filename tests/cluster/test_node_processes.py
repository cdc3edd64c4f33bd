"""A rollout node's processes on the real machine (no Ray): the order they start in."""

from __future__ import annotations

import sys
from pathlib import Path

from halo_cluster.node_plan import NodePlan, ProcessSpec
from halo_cluster.node_processes import NodeProcesses

# A service that listens only after a while, as an env does while it starts Chromium.
SLOW_SERVICE = """
import http.server, sys, time
time.sleep(1.5)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""
# A worker that asks the service once, the moment it starts, as a worker taking a job would
# (no braces: every argv word is a template the node fills in).
EAGER_WORKER = """
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
    outcome = "answered"
except OSError as exc:
    outcome = "not reachable: " + str(exc)
open(sys.argv[2], "w").write(outcome)
"""


def test_workers_start_only_once_the_services_answer(tmp_path: Path) -> None:
    seen = tmp_path / "worker-saw.txt"
    plan = NodePlan(
        processes=(
            ProcessSpec(
                "env", (sys.executable, "-c", SLOW_SERVICE, "{port.env}"), ready_url="http://{host}:{port.env}/"
            ),
            ProcessSpec("worker", (sys.executable, "-c", EAGER_WORKER, "http://{host}:{port.env}/", str(seen))),
        ),
        ports=("env",),
        ready_timeout_s=30,
    )
    processes = NodeProcesses(plan, "127.0.0.1", tmp_path / "logs", max_restarts=0)
    try:
        processes.start()
        worker = next(r for r in processes._running if r.spec.name == "worker")
        assert worker.proc is not None
        worker.proc.wait(timeout=30)
        assert seen.read_text() == "answered"
    finally:
        processes.stop()
