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
    s = store(aredis, key_prefix, claim_ms=300)
    req = request(state(), state(), episode_id="ep-a")
    token = await s.claim(req)
    assert token and await s.claim(req) is None  # the other worker is scoring it
    with pytest.raises(StoreBusy, match="still being scored"):
        await s.existing(req)
    await asyncio.sleep(0.4)  # the first worker died: its claim lapses
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
    first = request(state(), state(), episode_id="ep-b", step=0)
    assert await s.parent_memory(first) == EpisodeMemory()  # a new episode starts empty
    token = await s.claim(first)
    await s.commit(first, token, "fp", RewardBreakdown(transition_id=first.transition_id), EpisodeMemory(steps=7))
    sibling = request(state(), state(), episode_id="ep-b", step=0)  # another fork of the first state
    assert await s.parent_memory(sibling) == EpisodeMemory()  # not the memory after its sibling
    later = request(state(), state(), episode_id="ep-b", step=1)
    assert (await s.parent_memory(later)).steps == 7  # no parent named: the episode's latest
    old = request(state(), state(), episode_id="ep-b", step=0)  # a late sibling must not move the head back
    token = await s.claim(old)
    await s.commit(old, token, "fp", RewardBreakdown(transition_id=old.transition_id), EpisodeMemory(steps=1))
    assert (await s.parent_memory(later)).steps == 1  # same step: the latest commit wins
    newer = request(state(), state(), episode_id="ep-b", step=5)
    token = await s.claim(newer)
    await s.commit(newer, token, "fp", RewardBreakdown(transition_id=newer.transition_id), EpisodeMemory(steps=9))
    token = await s.claim(old2 := request(state(), state(), episode_id="ep-b", step=2))
    await s.commit(old2, token, "fp", RewardBreakdown(transition_id=old2.transition_id), EpisodeMemory(steps=3))
    assert (await s.parent_memory(later)).steps == 9  # step 2 arrived late: the head stays at step 5
    orphan = request(state(), state(), episode_id="ep-b", parent_transition_id="t-nope")
    with pytest.raises(StoreConflict, match="unknown parent_transition_id"):
        await s.parent_memory(orphan)
