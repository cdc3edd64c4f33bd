"""Fixed-latency stand-ins for a rollout node's processes, for tests and benches about placement,
fan-out and failover rather than the model (docs/cluster.md).

``python -m tests.cluster.stub_node env --port P --latency-ms 40``: an HTTP service whose ``/step``
answers after a fixed delay and whose ``/health`` answers at once.

``python -m tests.cluster.stub_node worker --env-url U --policy-ms 40``: takes ``StubJob``s from the
Redis stream ``<prefix>jobs`` (the real ``halo.queue``), plays ``steps`` steps each (a policy
"sample" of fixed latency, then one env ``/step``), counts the transitions in ``<prefix>transitions``
and marks the job done in the queue, with the node it ran on in ``<prefix>ran_on`` and how many
times it was completed in ``<prefix>done_count``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import uuid

import httpx
import redis.asyncio as aioredis
from pydantic import BaseModel

from halo.queue import Delivery, StreamQueue


class StubJob(BaseModel):
    job_id: str
    steps: int


def job_queue(client: aioredis.Redis, prefix: str, claim_idle_ms: int = 3_000) -> StreamQueue[StubJob]:
    return StreamQueue(client, f"{prefix}jobs", "workers", StubJob, claim_idle_ms=claim_idle_ms)


async def publish_stub_jobs(redis_url: str, prefix: str, count: int, steps: int, name: str = "job") -> list[str]:
    """``count`` jobs of ``steps`` steps on ``<prefix>jobs``, each once (its id is its dedup id); their ids."""
    client = aioredis.from_url(redis_url)
    queue = job_queue(client, prefix)
    ids = [f"{name}-{i}-{uuid.uuid4().hex[:6]}" for i in range(count)]
    for job_id in ids:
        await queue.publish(StubJob(job_id=job_id, steps=steps), dedup_id=job_id)
    await client.aclose()
    return ids


def serve_env(port: int, latency_ms: float, host: str) -> None:
    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/health")
    async def health() -> dict:
        return {"service": "stub-env", "pid": os.getpid()}

    @app.get("/step")
    async def step() -> dict:
        await asyncio.sleep(latency_ms / 1000)
        return {"ok": True}

    uvicorn.run(app, host=host, port=port, log_level="warning")


async def work(env_url: str, policy_ms: float, redis_url: str, prefix: str, node: str) -> None:
    client = aioredis.from_url(redis_url, decode_responses=True)
    queue = job_queue(client, prefix)
    consumer = f"{socket.gethostname()}-{os.getpid()}"
    async with httpx.AsyncClient(base_url=env_url, timeout=30) as env:

        async def play(delivery: Delivery[StubJob]) -> None:
            for _ in range(delivery.message.steps):
                await asyncio.sleep(policy_ms / 1000)
                (await env.get("/step")).raise_for_status()
                await client.incr(f"{prefix}transitions")
            await client.hset(f"{prefix}ran_on", delivery.message.job_id, node)
            await client.hincrby(f"{prefix}done_count", delivery.message.job_id, 1)

        while True:
            await queue.process(consumer, play, block_ms=500)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    env = sub.add_parser("env")
    env.add_argument("--host", default="127.0.0.1")
    env.add_argument("--port", type=int, required=True)
    env.add_argument("--latency-ms", type=float, default=40.0)
    worker = sub.add_parser("worker")
    worker.add_argument("--env-url", required=True)
    worker.add_argument("--policy-ms", type=float, default=40.0)
    worker.add_argument("--redis-url", required=True)
    worker.add_argument("--prefix", required=True)
    worker.add_argument("--node", default="")
    args = parser.parse_args()
    if args.what == "env":
        serve_env(args.port, args.latency_ms, args.host)
    else:
        asyncio.run(work(args.env_url, args.policy_ms, args.redis_url, args.prefix, args.node))


if __name__ == "__main__":
    main()
