"""A queue consumer run as a subprocess by test_queue.py, so the test can SIGKILL it mid-job.

Usage: python -m tests.shared.queue_worker REDIS_URL STREAM CONSUMER SLEEP_S
Each job: record "started", sleep SLEEP_S (the kill lands here), then record the result once.
"""

from __future__ import annotations

import asyncio
import sys

import redis.asyncio as aioredis

from halo.queue import Delivery, StreamQueue
from tests.shared.test_queue import Job, finish_job


async def main(url: str, stream: str, consumer: str, sleep_s: float) -> None:
    client = aioredis.from_url(url)
    queue = StreamQueue(client, stream, "workers", Job, claim_idle_ms=60_000)

    async def handle(delivery: Delivery[Job]) -> None:
        await client.rpush(f"{stream}:started", f"{consumer}:{delivery.message.job_id}")
        await asyncio.sleep(sleep_s)
        await finish_job(client, stream, delivery.message)

    while True:
        await queue.process(consumer, handle, block_ms=200)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
