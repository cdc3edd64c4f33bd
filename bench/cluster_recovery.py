"""Rollout nodes on Ray: the rate through a node's death and its rejoin, with the fixed-latency
stand-ins (tests/cluster/stub_node.py), so that what is measured is the cluster layer's recovery
and not this machine's cores (the release tier on network namespaces runs real services, whose
rate two shared cores bound: docs/cluster.md).

A real Ray cluster on the loopback (``ray.cluster_utils.Cluster``, token auth on): a head and
``--nodes`` raylets that each offer ``rollout_node``; the supervisor places a stub node on each
(a ``--env-ms`` env and ``--workers`` workers that spend ``--policy-ms`` per sample and take jobs
from the real Redis stream, ``halo.queue``, claim timeout 3 s). The jobs are published once, at
the start. Then, measured in one run:

1. the rate at N nodes over ``--window-s`` (the reference);
2. one raylet removed (its actor and every process it started die with it): the rate in the
   ``--window-s`` that starts when the claim timeout + 30 s have passed, against (N-1)/N of the
   reference (the goal);
3. ``--down-s`` later a new raylet joins: the seconds until the supervisor's node runs again, and
   until a ``--window-s`` of rate reaches N/N of the reference (95 %), the goal being 60 s;
4. every job done exactly once (the stubs count completions per job), none dead-lettered.

    .venv/bin/python bench/cluster_recovery.py [--nodes 3] [--workers 2] [--env-ms 40] [--policy-ms 40]

Writes bench/results/cluster_recovery.json.
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
CLAIM_S = 3.0  # tests.cluster.stub_node.job_queue's claim timeout
FULL = 0.95  # "back to N/N": a window at 95 % of the reference or more


async def publish(prefix: str, jobs: int, steps: int) -> list[str]:
    return await publish_stub_jobs(REDIS_URL, prefix, jobs, steps, name="bench")


class Rate:
    """Transitions/s over a window, from the stubs' counter, while the supervisor keeps ticking."""

    def __init__(self, client: redis.Redis, prefix: str, sup) -> None:
        self.client, self.key, self.sup = client, f"{prefix}transitions", sup

    def count(self) -> int:
        return int(self.client.get(self.key) or 0)

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sup.tick()
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))

    def over(self, seconds: float) -> float:
        before, started = self.count(), time.monotonic()
        self.wait(seconds)
        return (self.count() - before) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=3, help="Rollout nodes (N)")
    parser.add_argument("--workers", type=int, default=2, help="Workers per rollout node (K)")
    parser.add_argument("--env-ms", type=float, default=40.0)
    parser.add_argument("--policy-ms", type=float, default=40.0)
    parser.add_argument("--steps", type=int, default=5, help="Steps per job")
    parser.add_argument("--jobs", type=int, default=2500)
    parser.add_argument("--warmup-s", type=float, default=5.0)
    parser.add_argument("--window-s", type=float, default=10.0)
    parser.add_argument("--down-s", type=float, default=45.0, help="How long the node stays away")
    parser.add_argument("--rejoin-limit-s", type=float, default=120.0)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "cluster_recovery.json"))
    args = parser.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    from halo_cluster.supervisor import Supervisor

    use_token_here(secrets.token_hex(16))
    prefix = f"bench:recovery:{uuid.uuid4().hex[:8]}:"
    client = redis.Redis.from_url(REDIS_URL)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    raylets = [cluster.add_node(num_cpus=1, resources={"rollout_node": 1}) for _ in range(args.nodes)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="halo", logging_level="WARNING")
    settings = ClusterSettings(key_prefix=prefix, rollout_nodes=args.nodes, create_deadline_s=30.0)
    plan = stub_plan(
        workers=args.workers, redis_url=REDIS_URL, prefix=prefix, env_ms=args.env_ms, policy_ms=args.policy_ms
    )
    sup = Supervisor(settings, plan, client)
    rate = Rate(client, prefix, sup)
    result: dict = {}
    try:
        status = sup.tick()
        while sum(n.state == "running" for n in status.nodes) < args.nodes:
            time.sleep(0.5)
            status = sup.tick()
        ids = asyncio.run(publish(prefix, args.jobs, args.steps))
        rate.wait(args.warmup_s)
        reference = rate.over(args.window_s)
        print(json.dumps({"phase": "all nodes", "transitions_per_s": round(reference, 2)}), flush=True)

        cluster.remove_node(raylets.pop(), allow_graceful=False)
        killed = time.monotonic()
        rate.wait(CLAIM_S + 30.0 - (time.monotonic() - killed))
        after_kill = rate.over(args.window_s)
        status = sup.tick()
        lost = [n.model_dump(include={"name", "state", "reason"}) for n in status.nodes if n.state != "running"]
        print(json.dumps({"phase": "one node killed", "transitions_per_s": round(after_kill, 2)}), flush=True)
        rate.wait(args.down_s - (time.monotonic() - killed))

        raylets.append(cluster.add_node(num_cpus=1, resources={"rollout_node": 1}))
        joined = time.monotonic()
        placed_s = None
        windows = []
        while time.monotonic() - joined < args.rejoin_limit_s:
            window = rate.over(args.window_s)
            if placed_s is None and all(n.state == "running" for n in sup.tick().nodes):
                placed_s = time.monotonic() - joined
            windows.append(
                {"ended_after_join_s": round(time.monotonic() - joined, 1), "transitions_per_s": round(window, 2)}
            )
            print(json.dumps({"phase": "rejoined", **windows[-1]}), flush=True)
            if window >= FULL * reference:
                break
        full_s = (
            windows[-1]["ended_after_join_s"]
            if windows and windows[-1]["transitions_per_s"] >= FULL * reference
            else None
        )

        deadline = time.monotonic() + 600
        while client.hlen(f"{prefix}done_count") < len(ids) and time.monotonic() < deadline:
            rate.wait(2.0)
        done_counts = [int(n) for n in client.hvals(f"{prefix}done_count")]
        exactly_once = {
            "published": len(ids),
            "done": len(done_counts),
            "done_twice_or_more": sum(n > 1 for n in done_counts),
            "dead_letters": int(client.xlen(f"{prefix}jobs:dead")),
        }
        n = args.nodes
        result = {
            "reference_transitions_per_s": round(reference, 2),
            "after_kill": {
                "window_starts_after_kill_s": CLAIM_S + 30.0,
                "transitions_per_s": round(after_kill, 2),
                "vs_reference": round(after_kill / reference, 3),
                "goal_vs_reference": round((n - 1) / n, 3),
                "supervisor_said": lost,
            },
            "rejoin": {
                "node_running_after_join_s": None if placed_s is None else round(placed_s, 1),
                "windows": windows,
                "back_to_full_after_join_s": full_s,
                "goal_s": 60.0,
            },
            "exactly_once": exactly_once,
        }
    finally:
        sup.shutdown()
        ray.shutdown()
        cluster.shutdown()
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)
    n = args.nodes
    once = result["exactly_once"]
    result |= {
        "benchmark": "cluster_recovery",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg_at_end": os.getloadavg()},
        "settings": vars(args) | {"out": None},
        "goal_met": result["after_kill"]["vs_reference"] >= FULL * (n - 1) / n
        and result["rejoin"]["back_to_full_after_join_s"] is not None
        and result["rejoin"]["back_to_full_after_join_s"] <= 60.0
        and once["done"] == once["published"]
        and once["done_twice_or_more"] == 0
        and once["dead_letters"] == 0,
        "command": "bench/cluster_recovery.py " + " ".join(sys.argv[1:]),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("after_kill", "rejoin", "exactly_once", "goal_met")}))


if __name__ == "__main__":
    main()
