"""Rollout nodes on Ray: transitions/s at 1, 2 and 3 rollout nodes, measured in one run, with the
fixed-latency stand-ins (tests/cluster/stub_node.py), and the CPU that Redis and the head use.

A real Ray cluster on the loopback (``ray.cluster_utils.Cluster``, token auth on): a head and one
raylet that offers ``rollout_node``. The supervisor wants 3 rollout nodes from the start, so two
are reported unplaceable; the bench then joins a second and a third raylet mid-run and the
supervisor places their actors without a restart. Each node runs a stub env (``--env-ms`` per
step) and ``--workers`` workers that take jobs from the real Redis stream (``halo.queue``) and
spend ``--policy-ms`` per step on a stand-in policy sample. Jobs are published once, at the start.
Per phase: ``--warmup-s`` after the new node runs, then transitions counted over ``--window-s``.

CPU: Redis (the server's own process, from /proc; shared with anything else using that server)
and the head (this process: the supervisor and the job publisher), in cores over each window.

    .venv/bin/python bench/cluster_scaling.py [--workers 2] [--env-ms 40] [--policy-ms 40] [--window-s 20]

Writes bench/results/cluster_scaling.json. The goal: 2 and 3 nodes >= 1.85x and >= 2.6x
one node. This machine's cores are shared: compare the ratios, not absolute rates.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import sys
import time
import uuid
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from halo.settings.cluster import ClusterSettings  # noqa: E402
from halo_cluster.ray_auth import use_token_here  # noqa: E402
from tests.cluster.stub_node import publish_stub_jobs  # noqa: E402
from tests.cluster.stub_plan import stub_plan  # noqa: E402

REDIS_URL = os.environ.get("HALO_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def publish(prefix: str, jobs: int, steps: int) -> list[str]:
    return await publish_stub_jobs(REDIS_URL, prefix, jobs, steps, name="bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="Workers per rollout node (K)")
    parser.add_argument("--env-ms", type=float, default=40.0)
    parser.add_argument("--policy-ms", type=float, default=40.0)
    parser.add_argument("--steps", type=int, default=5, help="Steps per job")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--warmup-s", type=float, default=5.0)
    parser.add_argument("--window-s", type=float, default=20.0)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "cluster_scaling.json"))
    args = parser.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    from halo_cluster.supervisor import Supervisor

    use_token_here(secrets.token_hex(16))
    prefix = f"bench:cluster:{uuid.uuid4().hex[:8]}:"
    client = redis.Redis.from_url(REDIS_URL)
    redis_pid = int(client.info("server")["process_id"])
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1, resources={"rollout_node": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="halo", logging_level="WARNING")
    settings = ClusterSettings(key_prefix=prefix, rollout_nodes=3, create_deadline_s=10.0)
    plan = stub_plan(
        workers=args.workers, redis_url=REDIS_URL, prefix=prefix, env_ms=args.env_ms, policy_ms=args.policy_ms
    )
    sup = Supervisor(settings, plan, client)
    phases = []
    try:
        asyncio.run(publish(prefix, args.jobs, args.steps))
        for nodes in (1, 2, 3):
            if nodes > 1:
                cluster.add_node(num_cpus=1, resources={"rollout_node": 1})
            joined = time.monotonic()
            status = sup.tick()
            while sum(n.state == "running" for n in status.nodes) < nodes:
                time.sleep(0.5)
                status = sup.tick()
            placed_s = time.monotonic() - joined
            waiting = [n.reason for n in status.nodes if n.state != "running"]
            deadline = time.monotonic() + args.warmup_s
            while time.monotonic() < deadline:
                sup.tick()
                time.sleep(1.0)
            before = int(client.get(f"{prefix}transitions") or 0)
            redis_cpu, head_cpu, started = cpu_seconds(redis_pid), time.process_time(), time.monotonic()
            deadline = started + args.window_s
            while time.monotonic() < deadline:
                sup.tick()
                time.sleep(1.0)
            elapsed = time.monotonic() - started
            after = int(client.get(f"{prefix}transitions") or 0)
            phase = {
                "rollout_nodes": nodes,
                "transitions_per_s": round((after - before) / elapsed, 2),
                "placed_after_join_s": round(placed_s, 1),
                "redis_cores": round((cpu_seconds(redis_pid) - redis_cpu) / elapsed, 3),
                "head_cores": round((time.process_time() - head_cpu) / elapsed, 3),
                "nodes_not_running_reason": waiting[:1],
            }
            phases.append(phase)
            print(json.dumps(phase))
            if after >= args.jobs * args.steps:
                raise SystemExit("the job backlog ran out during a window: raise --jobs")
    finally:
        sup.shutdown()
        ray.shutdown()
        cluster.shutdown()
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)
    one = phases[0]["transitions_per_s"]
    ratios = {f"{p['rollout_nodes']}_vs_1": round(p["transitions_per_s"] / one, 2) for p in phases[1:]}
    result = {
        "benchmark": "cluster_scaling",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg_at_end": os.getloadavg()},
        "settings": vars(args) | {"out": None},
        "phases": phases,
        "ratios": ratios,
        "goal": {"2_vs_1": 1.85, "3_vs_1": 2.6},
        "goal_met": ratios.get("2_vs_1", 0) >= 1.85 and ratios.get("3_vs_1", 0) >= 2.6,
        "command": "bench/cluster_scaling.py " + " ".join(sys.argv[1:]),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(ratios), "goal met" if result["goal_met"] else "goal NOT met")


if __name__ == "__main__":
    main()
