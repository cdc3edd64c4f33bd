"""Redis Streams queue against the real Redis: reclaim after SIGKILL, dead letters, duplicates."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from halo.queue import Delivery, StreamQueue

ROOT = Path(__file__).resolve().parents[2]


class Job(BaseModel):
    job_id: str
    payload: int = 0


async def finish_job(client, stream: str, job: Job) -> None:
    """The job's side effect, idempotent by job id: the result is written once, counted once."""
    if await client.hsetnx(f"{stream}:results", job.job_id, job.payload * 2):
        await client.hincrby(f"{stream}:finished_count", job.job_id, 1)


def make_queue(aredis, key_prefix: str, **kw) -> StreamQueue[Job]:
    return StreamQueue(aredis, f"{key_prefix}:jobs", "workers", Job, **kw)


async def test_publish_consume_ack(aredis, key_prefix):
    q = make_queue(aredis, key_prefix)
    await q.publish(Job(job_id="a", payload=1), dedup_id="a")
    [d] = await q.consume("c1", block_ms=100)
    assert d.message == Job(job_id="a", payload=1) and d.dedup_id == "a" and d.deliveries == 1
    assert (await q.stats())["pending"] == 1
    await q.ack(d)
    stats = await q.stats()
    assert stats["pending"] == 0 and stats["lag"] == 0
    assert await q.consume("c1", block_ms=50) == []


async def test_unacked_message_is_reclaimed_by_another_consumer(aredis, key_prefix):
    q = make_queue(aredis, key_prefix, claim_idle_ms=50)
    await q.publish(Job(job_id="a"))
    [first] = await q.consume("dies", block_ms=100)
    await asyncio.sleep(0.1)
    [again] = await q.consume("survivor", block_ms=100)
    assert again.entry_id == first.entry_id and again.deliveries == 2


async def test_duplicate_deliveries_are_processed_once(aredis, key_prefix):
    q = make_queue(aredis, key_prefix)
    calls: list[str] = []

    async def handler(d: Delivery[Job]) -> None:
        calls.append(d.dedup_id)
        await finish_job(aredis, q.stream, d.message)

    for _ in range(3):  # a producer retrying the same job three times
        await q.publish(Job(job_id="j1", payload=5), dedup_id="j1")
    await q.publish(Job(job_id="j2", payload=7), dedup_id="j2")
    handled = 0
    for _ in range(6):
        handled += await q.process("c1", handler, count=10, block_ms=50)
    assert handled == 2 and sorted(calls) == ["j1", "j2"]
    assert (await q.stats())["pending"] == 0
    assert await aredis.hget(f"{q.stream}:finished_count", "j1") == b"1"


async def test_poison_message_dead_lettered_after_max_deliveries(aredis, key_prefix):
    q = make_queue(aredis, key_prefix, max_deliveries=3, claim_idle_ms=20)
    attempts = 0

    async def always_fails(d: Delivery[Job]) -> None:
        nonlocal attempts
        attempts += 1
        raise RuntimeError("poison")

    await q.publish(Job(job_id="bad"), dedup_id="bad")
    deadline = time.monotonic() + 10
    while not await aredis.xlen(q.dead_stream) and time.monotonic() < deadline:
        await q.process("c1", always_fails, block_ms=20)
        await asyncio.sleep(0.03)
    assert attempts == 3
    [dead] = await q.dead_letters()
    assert dead["dedup_id"] == "bad" and "delivered 4 times (max 3)" in dead["reason"]
    assert (await q.stats())["pending"] == 0


async def test_unparseable_message_goes_straight_to_dead_letters(aredis, key_prefix):
    q = make_queue(aredis, key_prefix)
    await q.ensure_group()
    await aredis.xadd(q.stream, {"data": '{"payload": "not a job"}', "type": "Job"})
    assert await q.consume("c1", block_ms=50) == []
    [dead] = await q.dead_letters()
    assert "does not parse as Job" in dead["reason"]


async def test_stream_length_is_bounded(aredis, key_prefix):
    q = make_queue(aredis, key_prefix, maxlen=100)
    for i in range(1000):
        await q.publish(Job(job_id=str(i)))
    # XADD MAXLEN ~ trims whole macro nodes: the bound is approximate but holds to within a node.
    assert await aredis.xlen(q.stream) < 300


@pytest.mark.slow
async def test_consumer_killed_mid_job_is_reclaimed_and_finished_exactly_once(aredis, key_prefix, redis_url):
    stream = f"{key_prefix}:jobs"
    q = StreamQueue(aredis, stream, "workers", Job, claim_idle_ms=300)
    await q.ensure_group()
    await q.publish(Job(job_id="job-1", payload=21), dedup_id="job-1")
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.shared.queue_worker", redis_url, stream, "doomed", "30"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 30
        while not await aredis.llen(f"{stream}:started") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await aredis.lrange(f"{stream}:started", 0, -1) == [b"doomed:job-1"]
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    assert (await q.stats())["pending"] == 1  # the dead consumer never acknowledged

    async def handle(d: Delivery[Job]) -> None:
        await finish_job(aredis, stream, d.message)

    deadline = time.monotonic() + 10
    handled = 0
    while not handled and time.monotonic() < deadline:
        handled = await q.process("survivor", handle, block_ms=100)
    assert handled == 1
    assert await aredis.hget(f"{stream}:results", "job-1") == b"42"
    assert await aredis.hget(f"{stream}:finished_count", "job-1") == b"1"
    assert (await q.stats())["pending"] == 0
    # a late duplicate of the same job is acknowledged without running again
    await q.publish(Job(job_id="job-1", payload=21), dedup_id="job-1")
    assert await q.process("survivor", handle, block_ms=100) == 0
    assert await aredis.hget(f"{stream}:finished_count", "job-1") == b"1"


async def test_heartbeat_keeps_a_long_job_from_being_reclaimed(aredis, key_prefix):
    q = make_queue(aredis, key_prefix, claim_idle_ms=150)
    await q.publish(Job(job_id="long"))
    [d] = await q.consume("busy", block_ms=100)
    for _ in range(4):
        await asyncio.sleep(0.08)
        await q.touch("busy", d)
        assert await q.consume("thief", block_ms=10) == []
    await asyncio.sleep(0.2)  # the heartbeat stops: the job is reclaimable, heartbeats not counted
    [again] = await q.consume("thief", block_ms=10)
    assert again.entry_id == d.entry_id and again.deliveries == 2


async def test_ack_many_acknowledges_and_marks_done_together_and_either_list_may_be_empty(aredis, key_prefix):
    q = make_queue(aredis, key_prefix, done_ttl_s=None)
    for job_id in ("a", "b", "c"):
        await q.publish(Job(job_id=job_id), dedup_id=job_id)
    a, b, c = await q.consume("learner", count=3, block_ms=100)
    await q.ack_many([], [])  # nothing to do is not an error (an empty XACK or SET list would be)
    await q.ack_many([a.entry_id], [])  # a dropped copy: acknowledged, its work not marked done
    assert (await q.stats())["pending"] == 2 and not await q.is_done("a")
    await q.ack_many([], ["x"])  # a mark for work whose entry was acknowledged earlier
    assert await q.is_done("x")
    await q.ack_many([b.entry_id, c.entry_id], ["b", "c"])
    assert (await q.stats())["pending"] == 0
    assert await q.is_done("b") and await q.is_done("c")
    assert await aredis.ttl(f"{q.stream}:done:b") == -1  # done_ttl_s=None: kept, never expires
