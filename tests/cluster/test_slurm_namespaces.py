"""`sbatch deploy/slurm/halo.sbatch`, unchanged, on a Slurm cluster of three network namespaces
(``slurm_cluster``): the head's step starts Redis, vLLM (the tiny model, CPU target), the Ray head
and the supervisor, the other two nodes join as rollout nodes through Slurm's own steps, the
trainer comes up, a short GRPO run trains on the rollout nodes, and `scancel` ends every process
the job started on every node.

What the command line gives sbatch instead of the file's values: three nodes, no GPU and one CPU
a task (these nodes have none and two), the log's folder; the environment gives the CPU target
(``HALO_POLICY_TARGET=cpu HALO_TRAINER_TARGET=cpu``), the data folder and Redis's password, as a
user's shell would. The figures go to ``bench/results/cluster_slurm.json`` (docs/cluster.md).
Run with ``make test-slurm`` (root; it installs slurm-wlm and munge).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cluster.namespace_cluster import _wait
from tests.cluster.namespaces import Namespaces, namespace_marks
from tests.cluster.slurm_cluster import SlurmCluster
from tests.cluster.slurm_cluster import unavailable as slurm_unavailable

pytestmark = [*namespace_marks(), pytest.mark.skipif(bool(slurm_unavailable()), reason=slurm_unavailable() or "-")]

ROOT = Path(__file__).resolve().parents[2]
SBATCH = ROOT / "deploy" / "slurm" / "halo.sbatch"
RESULTS = Path(os.environ.get("HALO_SLURM_RESULTS", ROOT / "bench" / "results" / "cluster_slurm.json"))


def test_the_sbatch_file_trains_on_namespace_nodes_and_scancel_ends_everything(tmp_path: Path) -> None:
    bin_dir = str(Path(sys.executable).parent)  # the `halo` the nodes run: this checkout's environment
    data = tmp_path / "data"
    data.mkdir()
    with Namespaces(3) as ns, SlurmCluster(ns, tmp_path / "slurm") as slurm:
        head = ns.nodes[0]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HALO_", "RAY_", "SLURM_"))}
        env |= {
            "PATH": f"{bin_dir}:{env.get('PATH', '')}",
            "PYTHONUNBUFFERED": "1",
            "HALO_DATA_DIR": str(data),
            "HALO_REDIS_PASSWORD": "slurm-namespaces-test",
            "HALO_POLICY_TARGET": "cpu",
            "HALO_TRAINER_TARGET": "cpu",
            "HALO_CLUSTER_WORKERS_PER_NODE": "2",
            # Chromium's first page on a loaded 2-core machine; Ray's memory monitor would read the
            # whole machine's memory, which other work shares (as in the namespace tier).
            "HALO_CLUSTER_CREATE_DEADLINE_S": "300",
            "RAY_memory_monitor_refresh_ms": "0",
        }
        submit = [
            "sbatch", "--parsable", "--nodes=3", "--gpus-per-node=0", "--cpus-per-task=1",
            f"--output={tmp_path}/halo-%j.log", str(SBATCH),
        ]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(
            submit, cwd=ROOT, env={**env, "SLURM_CONF": str(slurm.conf)}, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        job = done.stdout.strip().split(";")[0]
        log = tmp_path / f"halo-{job}.log"

        def in_head(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
            return ns.run(head, list(argv), env=env, timeout=timeout)

        def why() -> str:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no job log yet)"
            return f"job {job} {slurm.job_state(job)}, steps {slurm.steps(job)}\n{tail}"

        try:
            _wait(
                "the rollout nodes placed",
                lambda: in_head(f"{bin_dir}/halo", "cluster", "status").returncode == 0,
                900,
                2,
            )
            placed_s = time.monotonic() - started
            steps = slurm.steps(job)
            assert {s.split()[1] for s in steps} == {n.name for n in ns.nodes}, steps  # a step on every node
            _wait(
                "the trainer's API on the head",
                lambda: in_head("curl", "-fsS", "-m", "5", "http://127.0.0.1:8400/health").returncode == 0,
                600,
                2,
            )
            trainer_s = time.monotonic() - started
            train = in_head(
                f"{bin_dir}/halo", "train", "--no-stack", "--domain", "playground", "--task", "local.playground-1",
                "--episodes", "8", "--eval-every", "0", "--name", "slurm",
                timeout=900,
            )  # fmt: skip
            trained_s = time.monotonic() - started
            assert train.returncode == 0, f"{train.stdout[-3000:]}\n{train.stderr[-3000:]}"
            assert "updates           2" in train.stdout, train.stdout[-2000:]
            # Every episode on a rollout node: the head runs no env, so a worker of its own would
            # fail each job it took on the infrastructure.
            trainer_log = (data / "stack" / "logs" / "trainer.log").read_text(errors="replace")
            assert "failed on infrastructure" not in trainer_log
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{why()}") from None
        finally:
            cancelled = time.monotonic()
            slurm.slurm("scancel", job)
        _wait("the job gone from the queue", lambda: not slurm.job_state(job), 120, 1)
        slurmd = {proc.pid for proc in slurm.daemons}
        # Nothing the job started is left on any node: only each node's slurmd runs in its namespace.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            left = {n.name: sorted(set(ns.pids(n)) - slurmd) for n in ns.nodes}
            if not any(left.values()):
                break
            time.sleep(1)
        clean_s = time.monotonic() - cancelled
        slurm_version = slurm.slurm("sinfo", "--version").stdout.strip()
        assert not any(left.values()), {
            name: [Path(f"/proc/{pid}/cmdline").read_bytes()[:120] for pid in pids if Path(f"/proc/{pid}").exists()]
            for name, pids in left.items()
        }
    figures = {
        "placed_s": round(placed_s, 1),
        "trainer_healthy_s": round(trainer_s, 1),
        "run_of_2_updates_finished_s": round(trained_s, 1),
        "clean_after_scancel_s": round(clean_s, 1),
        "nodes": 3,
        "slurm": slurm_version,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_1m": round(os.getloadavg()[0], 1),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures))
