"""Episode store on the real Redis: claims, lost claims, parents and the head pointer."""

from __future__ import annotations

import asyncio

import pytest

from halo.schemas import RewardBreakdown
from halo_reward.core import EpisodeMemory
from halo_reward.store import EpisodeStore, StoreBusy, StoreConflict
from tests.reward.helpers import request, state


def store(aredis, key_prefix: str, claim_ms: int = 10_000, wait_s: float = 0.2) -> EpisodeStore:
    return EpisodeStore(aredis, f"{key_prefix}:", ttl_s=60, claim_ttl_ms=claim_ms, wait_s=wait_s)


async def test_a_crashed_scorer_blocks_briefly_then_its_claim_expires(aredis, key_prefix: str) -> None:
    # A claim long enough that a loaded machine still checks it before it lapses (300 ms did not, under load).
    s = store(aredis, key_prefix, claim_ms=2000)
    req = request(state(), state(), episode_id="ep-a")
    token = await s.claim(req)
    assert token and await s.claim(req) is None  # the other worker is scoring it
    with pytest.raises(StoreBusy, match="still being scored"):
        await s.existing(req)
    await asyncio.sleep(2.1)  # the first worker died: its claim lapses
    assert await s.existing(req) is None
    late = await s.claim(req)
    assert late
    with pytest.raises(StoreBusy, match="expired"):  # the dead worker's commit cannot land any more
        await s.commit(req, token, "fp", RewardBreakdown(transition_id=req.transition_id), EpisodeMemory())
    await s.commit(req, late, "fp", RewardBreakdown(transition_id=req.transition_id, total=1.5), EpisodeMemory(steps=1))
    stored = await s.existing(req)
    assert stored is not None and stored.breakdown.total == 1.5


async def test_parent_and_head(aredis, key_prefix: str) -> None:
    s = store(aredis, key_prefix)

    async def scored(step: int, steps: int, **kw) -> str:
        req = request(state(), state(), episode_id="ep-b", step=step, **kw)
        memory, parent = await s.parent_memory(req)
        token = await s.claim(req)
        await s.commit(
            req, token, "fp", RewardBreakdown(transition_id=req.transition_id), EpisodeMemory(steps=steps), parent
        )
        return req.transition_id

    async def start(step: int, **kw) -> tuple[int, str | None]:
        memory, parent = await s.parent_memory(request(state(), state(), episode_id="ep-b", step=step, **kw))
        return memory.steps, parent

    assert await start(0) == (0, None)  # a new episode starts empty
    first = await scored(0, steps=7)
    assert await start(0) == (0, None)  # another fork of the first state: not the memory after its sibling
    assert await start(1) == (7, first)  # no parent named: the episode's latest
    second = await scored(1, steps=8)
    # A sibling of the latest step that names no parent starts where the latest started.
    assert await start(1) == (7, first)
    assert await start(2) == (8, second)
    await scored(1, steps=30)  # a late sibling: the latest commit at the highest step is the head
    fifth = await scored(5, steps=9)
    await scored(2, steps=3)  # step 2 arrived late: the head stays at step 5
    assert await start(6) == (9, fifth)
    assert await start(3, parent_transition_id=second) == (8, second)  # a named parent wins
    with pytest.raises(StoreConflict, match="unknown parent_transition_id"):
        await start(3, parent_transition_id="t-nope")
