"""Episode memory and idempotency in Redis, so any number of stateless workers can serve one run.

Keys (all under the configured prefix, all with a TTL):

* ``t:<run>:<episode>:<transition>``: ``pending:<token>`` while one worker scores the transition,
  then a JSON record ``{fingerprint, breakdown, memory}``; ``memory`` is the branch's memory
  *after* this transition, which is what a child transition (``parent_transition_id``) starts from.
* ``head:<run>:<episode>``: ``<step>:<transition>`` of the latest-step transition, the parent of a
  request that names none.

Exactly-once payment under concurrent duplicates: a worker must win ``SET NX`` on the transition
key before scoring, and its commit only lands while its own pending token is still there; every
other worker with the same transition id waits for the record and answers it as a duplicate.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from halo.schemas import RewardBreakdown, RewardRequest
from halo_reward.core import EpisodeMemory

PENDING = "pending:"

# Write the final record only if we still hold the claim; move the head forward, never back.
_COMMIT = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
local head = redis.call('GET', KEYS[2])
local step = tonumber(ARGV[4])
if head then
  local s = tonumber(string.match(head, '^(%d+):'))
  if s and s > step then return 1 end
end
redis.call('SET', KEYS[2], ARGV[4] .. ':' .. ARGV[5], 'EX', ARGV[3])
return 1
"""


class StoreConflict(Exception):
    """The request contradicts what the store holds (reused id, unknown parent, claim lost)."""


class StoreBusy(Exception):
    """Another worker holds the transition (or its parent) longer than we are willing to wait."""


@dataclass(frozen=True)
class Stored:
    breakdown: RewardBreakdown
    memory: EpisodeMemory
    fingerprint: str
    parent: str | None = None  # the transition whose memory this one started from


class EpisodeStore:
    def __init__(
        self, client: aioredis.Redis, prefix: str, ttl_s: int, claim_ttl_ms: int, wait_s: float, poll_s: float = 0.01
    ) -> None:
        self.client, self.prefix, self.ttl_s = client, prefix, ttl_s
        self.claim_ttl_ms, self.wait_s, self.poll_s = claim_ttl_ms, wait_s, poll_s
        self._commit = client.register_script(_COMMIT)

    def _tkey(self, req: RewardRequest, transition_id: str) -> str:
        return f"{self.prefix}t:{req.run_id}:{req.episode_id}:{transition_id}"

    def _head(self, req: RewardRequest) -> str:
        return f"{self.prefix}head:{req.run_id}:{req.episode_id}"

    async def _wait_record(self, key: str, what: str) -> Stored | None:
        """The final record at ``key``: waits while it is pending, None when absent."""
        deadline = time.monotonic() + self.wait_s
        while True:
            raw = await self.client.get(key)
            if raw is None:
                return None
            text = raw.decode() if isinstance(raw, bytes) else raw
            if not text.startswith(PENDING):
                data: dict[str, Any] = json.loads(text)
                return Stored(
                    breakdown=RewardBreakdown.model_validate(data["breakdown"]),
                    memory=EpisodeMemory.model_validate(data["memory"]),
                    fingerprint=data["fingerprint"],
                    parent=data.get("parent"),
                )
            if time.monotonic() > deadline:
                raise StoreBusy(f"{what} is still being scored by another worker; retry later")
            await asyncio.sleep(self.poll_s)

    async def existing(self, req: RewardRequest) -> Stored | None:
        return await self._wait_record(self._tkey(req, req.transition_id), f"transition {req.transition_id}")

    async def claim(self, req: RewardRequest) -> str | None:
        """A claim token when this worker is to score the transition; None when another has it."""
        token = PENDING + secrets.token_hex(8)
        ok = await self.client.set(self._tkey(req, req.transition_id), token, nx=True, px=self.claim_ttl_ms)
        return token if ok else None

    async def release(self, req: RewardRequest, token: str) -> None:
        """Give the claim back after a failure, so a retry can score the transition."""
        key = self._tkey(req, req.transition_id)
        script = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
        await self.client.eval(script, 1, key, token)

    async def parent_memory(self, req: RewardRequest) -> tuple[EpisodeMemory, str | None]:
        """The memory this transition starts from, and the transition that left it (None: a fresh one)."""
        if req.parent_transition_id is not None:
            stored = await self._wait_record(
                self._tkey(req, req.parent_transition_id), f"parent transition {req.parent_transition_id}"
            )
            if stored is None:
                raise StoreConflict(
                    f"unknown parent_transition_id {req.parent_transition_id!r} in episode {req.episode_id!r} "
                    "(never scored, or expired)"
                )
            return stored.memory, req.parent_transition_id
        head = await self.client.get(self._head(req))
        if head is None:
            return EpisodeMemory(), None
        head_step, parent_id = (head.decode() if isinstance(head, bytes) else head).split(":", 1)
        stored = await self._wait_record(self._tkey(req, parent_id), f"transition {parent_id}")
        if stored is not None and int(head_step) == req.step:
            # The latest transition is a sibling (a fork of the same state that named no parent,
            # e.g. of the first state): start from what it started from, never from its result.
            parent_id = stored.parent
            stored = (
                await self._wait_record(self._tkey(req, parent_id), f"transition {parent_id}") if parent_id else None
            )
        return (stored.memory, parent_id) if stored is not None else (EpisodeMemory(), None)

    async def commit(
        self,
        req: RewardRequest,
        token: str,
        fingerprint: str,
        breakdown: RewardBreakdown,
        memory: EpisodeMemory,
        parent: str | None = None,
    ) -> None:
        record = json.dumps(
            {
                "fingerprint": fingerprint,
                "parent": parent,
                "breakdown": breakdown.model_dump(mode="json"),
                "memory": memory.model_dump(mode="json"),
            }
        )
        keys = [self._tkey(req, req.transition_id), self._head(req)]
        ok = await self._commit(keys=keys, args=[token, record, self.ttl_s, req.step, req.transition_id])
        if not ok:
            raise StoreBusy(f"claim on transition {req.transition_id} expired before it was stored; retry")
