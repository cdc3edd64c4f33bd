"""Adapter fan-out to policy replicas: publish time at 1 and at 4 replicas, with samples running
meanwhile, and one replica killed and restarted mid-run at 4.

Stand-ins for vLLM (tests/cluster/stub_replica.py, real HTTP server processes): loading an adapter
takes ``--load-ms``, a sample ``--sample-ms``. Per replica count, ``--versions`` versions are
published one after another (``halo.adapter_fanout``: load on every live replica at once, then
check every ``/v1/models``); versions older than ``--keep`` are retired. Meanwhile ``--samplers``
jobs sample the current version through ``halo.policy_replicas`` (sticky, least-loaded, failover)
and count any error that reaches them and any answer from a version outside the kept window.
At 4 replicas one is SIGKILLed a third of the way through and restarted (empty, as a restarted
vLLM is); it re-joins (loads the live versions) before it serves again.

    .venv/bin/python bench/adapter_fanout.py [--versions 30] [--load-ms 200] [--sample-ms 30]

Writes bench/results/adapter_fanout.json. Goal: p95 publish at 4 replicas <= 1.5x one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis.asyncio as aioredis  # noqa: E402

from halo.adapter_fanout import AdapterFanout  # noqa: E402
from halo.policy_replicas import ReplicaPool, ReplicaRegistry  # noqa: E402
from halo.schemas.cluster import ReplicaRecord  # noqa: E402
from halo.transport import CallError  # noqa: E402
from tests.cluster.replicas import StubReplica, start_replicas  # noqa: E402

REDIS_URL = os.environ.get("HALO_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def record(stub: StubReplica) -> ReplicaRecord:
    return ReplicaRecord(replica_id=stub.replica_id, url=stub.url, max_loras=8)


async def phase(stubs: list[StubReplica], args, restart_one: bool) -> dict:
    client = aioredis.from_url(REDIS_URL)
    prefix = f"bench:fanout:{uuid.uuid4().hex[:8]}:"
    pool = ReplicaPool(ReplicaRegistry(client, prefix, ttl_s=60.0))
    fanout = AdapterFanout(pool)
    for stub in stubs:
        await fanout.join(record(stub))
    kept: list[str] = []
    errors: list[str] = []
    outside_window = samples = 0
    stop = asyncio.Event()

    async def sampler(index: int) -> None:
        nonlocal outside_window, samples
        while not stop.is_set():
            current = await fanout.current()
            if current is None:
                await asyncio.sleep(0.05)
                continue
            try:
                sample = await pool.chat(f"job-{index}-{samples}", {"model": current, "messages": []})
            except CallError as exc:
                errors.append(str(exc)[:200])
                continue
            samples += 1
            outside_window += sample.adapter not in kept

    tasks = [asyncio.create_task(sampler(i)) for i in range(args.samplers)]
    publish_s: list[float] = []
    incomplete = 0
    for v in range(args.versions):
        if restart_one and v == args.versions // 3:
            stubs[-1].kill()
            await asyncio.to_thread(stubs[-1].start().wait_ready)
            await fanout.join(record(stubs[-1]))
        name = f"bench-v{v}"
        result = await fanout.publish(name, f"/adapters/v{v}")
        publish_s.append(result.seconds)
        incomplete += not result.current
        kept.append(name)
        while len(kept) > args.keep:
            await fanout.retire(kept.pop(0))
    stop.set()
    await asyncio.gather(*tasks)
    counters = await pool.registry.counters()
    await pool.aclose()
    keys = [k async for k in client.scan_iter(f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()
    return {
        "replicas": len(stubs),
        "publishes": len(publish_s),
        "publish_p50_s": round(p(publish_s, 0.5), 4),
        "publish_p95_s": round(p(publish_s, 0.95), 4),
        "not_current": incomplete,
        "samples": samples,
        "errors_reaching_samplers": len(errors),
        "error_examples": errors[:3],
        "answers_outside_window": outside_window,
        "infra_counters": counters,
        "replica_restarted": restart_one,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", type=int, default=30)
    parser.add_argument("--keep", type=int, default=3, help="Versions kept live (the staleness window)")
    parser.add_argument("--load-ms", type=float, default=200.0)
    parser.add_argument("--sample-ms", type=float, default=30.0)
    parser.add_argument("--samplers", type=int, default=4)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "adapter_fanout.json"))
    args = parser.parse_args()
    stub_args = ("--load-ms", str(args.load_ms), "--latency-ms", str(args.sample_ms), "--max-loras", "8")
    stubs = start_replicas(4, *stub_args)
    try:
        phases = [asyncio.run(phase(stubs[:1], args, False)), asyncio.run(phase(stubs, args, True))]
    finally:
        for stub in stubs:
            stub.kill()
    for row in phases:
        print(json.dumps(row))
    ratio = round(phases[1]["publish_p95_s"] / phases[0]["publish_p95_s"], 2)
    result = {
        "benchmark": "adapter_fanout",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg_at_end": os.getloadavg()},
        "settings": vars(args) | {"out": None},
        "phases": phases,
        "p95_4_vs_1": ratio,
        "goal": {"p95_4_vs_1_max": 1.5, "answers_outside_window": 0, "errors_reaching_samplers": 0},
        "goal_met": ratio <= 1.5
        and all(r["answers_outside_window"] == r["errors_reaching_samplers"] == 0 for r in phases),
        "command": "bench/adapter_fanout.py " + " ".join(sys.argv[1:]),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"p95 4 vs 1 replica: {ratio}x;", "goal met" if result["goal_met"] else "goal NOT met")


if __name__ == "__main__":
    main()
