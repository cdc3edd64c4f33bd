"""Reward service throughput: scored transitions per second through HTTP, and of the core function alone.

Starts one reward service process (one uvicorn worker) on a free port against the Redis at
HALO_TEST_REDIS_URL (default: the local Redis, db 15), under a key prefix it deletes afterwards,
and drives it with realistic GoMail-like transitions (a 30-email site state, a 3 KB accessibility
tree, progress flags growing along 10-step episodes; 10 % of requests are duplicates). The load
generator runs on the same machine, so on a 2-core box it competes with the server for CPU.

    .venv/bin/python bench/bench_reward.py [--requests 2000] [--concurrency 8]

Writes bench/results/reward.json and prints a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from halo.schemas import Action, RewardRequest, StateSummary  # noqa: E402
from halo_reward.core import EpisodeMemory, ScoringOptions, score  # noqa: E402
from halo_reward.rules import RuleBook  # noqa: E402
from tests.reward.conftest import drop_prefix, start_reward_service  # noqa: E402

MILESTONES = ["compose_opened", "recipient_filled", "subject_filled", "send_clicked", "message_sent"]
EMAILS = {f"e{i:02d}": {"id": f"e{i:02d}", "isRead": i % 3 == 0, "subject": f"Subject {i}"} for i in range(30)}
AXTREE = "\n".join(f'  [{i}] link "Email {i} from sender{i}@example.com: subject line {i}"' for i in range(40))


def summary(step: int) -> StateSummary:
    progress = {m: True for m in MILESTONES[: min(step, len(MILESTONES))]}
    state = {
        "site": "gomail",
        "initialfinaldiff": {
            "added": {},
            "updated": {"email": {"emails": {"e01": {"isRead": step > 2}}}},
            "deleted": {},
        },
        "differences": {"emails": {"added": [], "updated": [EMAILS["e01"]] if step > 2 else [], "deleted": []}},
        "progress": progress,
        "state_size_padding": EMAILS,
    }
    return StateSummary(url=f"http://127.0.0.1:8300/gomail/#/step{step}", axtree=AXTREE, site_state=state)


def transitions(n: int, run: str) -> list[RewardRequest]:
    out: list[RewardRequest] = []
    while len(out) < n:
        episode = f"ep-{uuid.uuid4().hex[:8]}"
        for step in range(10):
            out.append(
                RewardRequest(
                    transition_id=f"{episode}-{step}",
                    run_id=run,
                    episode_id=episode,
                    task_id="local.gomail-1",
                    domain="gomail",
                    step=step,
                    prev=summary(step),
                    next=summary(step + 1),
                    action=Action(action="left_click", coordinate=(100 + step, 200)),
                    group_id=f"g-{step}",
                    terminated=step == 9,
                    task_success=step == 9,
                )
            )
    return out[:n]


async def drive(base: str, requests: list[RewardRequest], concurrency: int) -> tuple[float, list[float], int]:
    """Episodes run concurrently; steps within an episode in order (as rollout workers do)."""
    episodes: dict[str, list[dict]] = {}
    for r in requests:
        episodes.setdefault(r.episode_id, []).append(r.model_dump(mode="json", exclude_none=True))
    queue: asyncio.Queue[list[dict]] = asyncio.Queue()
    for steps in episodes.values():
        queue.put_nowait(steps)
    latencies: list[float] = []
    errors = 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors
        while not queue.empty():
            steps = queue.get_nowait()
            for i, body in enumerate(steps):
                for _ in range(2 if i % 10 == 5 else 1):  # every tenth request is a duplicate
                    t0 = time.perf_counter()
                    r = await client.post("/reward", json=body)
                    latencies.append(time.perf_counter() - t0)
                    errors += r.status_code != 200

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        await client.post("/reward", json=requests[0].model_dump(mode="json"))  # warm up
        t0 = time.perf_counter()
        await asyncio.gather(*[worker(client) for _ in range(concurrency)])
        elapsed = time.perf_counter() - t0
    return elapsed, latencies, errors


def core_rate(requests: list[RewardRequest]) -> float:
    rules = RuleBook.load(ROOT / "configs" / "rewards").for_domain("gomail")
    opts = ScoringOptions()
    memory = EpisodeMemory()
    t0 = time.perf_counter()
    for r in requests:
        _, memory = score(r, memory if r.step else EpisodeMemory(), rules, opts)
    return len(requests) / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    load_before = round(os.getloadavg()[0], 2)
    prefix = f"bench:reward:{uuid.uuid4().hex[:8]}:"
    reqs = transitions(args.requests, run=f"bench-{uuid.uuid4().hex[:6]}")
    proc, base = start_reward_service(prefix)
    try:
        elapsed, latencies, errors = asyncio.run(drive(base, reqs, args.concurrency))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        drop_prefix(prefix)
    lat = sorted(latencies)
    result = {
        "benchmark": "reward",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            # Other work on the machine shares its cores: read the figures with the load they ran under.
            "load_average_1m_before": load_before,
            "load_average_1m_after": round(os.getloadavg()[0], 2),
        },
        "http": {
            "requests": len(latencies),
            "duplicates": len(latencies) - len(reqs),
            "concurrency": args.concurrency,
            "errors": errors,
            "seconds": round(elapsed, 3),
            "requests_per_s": round(len(latencies) / elapsed, 1),
            "latency_ms_p50": round(1000 * statistics.median(lat), 2),
            "latency_ms_p99": round(1000 * lat[int(0.99 * (len(lat) - 1))], 2),
            "request_bytes_mean": round(statistics.mean(len(r.model_dump_json()) for r in reqs[:200])),
            "workers": 1,
        },
        "core_score_per_s": round(core_rate(reqs), 1),
        "command": f"python bench/bench_reward.py --requests {args.requests} --concurrency {args.concurrency}",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out = ROOT / "bench" / "results" / "reward.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    h = result["http"]
    print(
        f"reward: {h['requests_per_s']} requests/s over HTTP ({h['requests']} requests, {h['duplicates']} duplicates, "
        f"concurrency {h['concurrency']}, 1 worker, errors {h['errors']}), p50 {h['latency_ms_p50']} ms, "
        f"p99 {h['latency_ms_p99']} ms; core score() {result['core_score_per_s']}/s; "
        f"load average {load_before} on {os.cpu_count()} CPUs -> {out.relative_to(ROOT)}"
    )


if __name__ == "__main__":
    main()
