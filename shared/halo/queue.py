"""Redis Streams work queues with consumer groups: nothing is lost, nothing is done twice.

Guarantees, and how they are kept:
- At-least-once delivery: a message stays in the group's pending list until the consumer calls
  ``ack`` *after* its side effect is durable. A consumer that dies mid-job leaves it pending;
  ``consume`` first reclaims entries idle longer than ``claim_idle_ms`` (XAUTOCLAIM), so another
  consumer finishes the job.
- Effectively-once handling: every message carries a ``dedup_id`` (the job id, say). ``process``
  skips a message whose ``dedup_id`` is already marked done, and marks it done together with the
  ack (one MULTI). Handlers must still make their own side effect idempotent for the narrow window
  between the side effect and the mark (e.g. write results with HSETNX keyed by the same id).
  A consumer that acknowledges later, in batches (the run loop, after a checkpoint), uses
  ``ack_many`` and ``is_done`` directly: the queue stays the only code that acknowledges or marks.
- Poison messages: a message delivered more than ``max_deliveries`` times, or one that does not
  parse, is moved to ``<stream>:dead`` with the reason, and acknowledged on the main stream.
- Bounded memory: XADD trims the stream to about ``maxlen`` entries (keep it far above the number
  of messages in flight: Redis trims pending entries too, and those are reported as lost).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Generic, TypeVar, Union, get_args, get_origin

import redis.asyncio as aioredis
from pydantic import BaseModel, TypeAdapter, ValidationError
from redis.exceptions import ResponseError

logger = logging.getLogger("halo.queue")

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Delivery(Generic[M]):
    """One message handed to a consumer."""

    entry_id: str  # the Redis stream entry id
    dedup_id: str  # the producer's id for the work; duplicates share it
    message: M
    deliveries: int  # how many times this entry has been delivered, this one included


class StreamQueue(Generic[M]):
    """A typed queue over one Redis stream and one consumer group.

    ``model``: the message type, a model class or a union of them (an ``Annotated`` discriminated
    union, say); messages are parsed with a ``TypeAdapter`` of it, so a union gives each message
    its own class.

    ``done_ttl_s``: how long a done-mark is kept (``None``: as long as the Redis data), i.e. how
    late a duplicate can still be recognised.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        stream: str,
        group: str,
        model: type[M] | Any,
        *,
        maxlen: int = 100_000,
        max_deliveries: int = 5,
        claim_idle_ms: int = 60_000,
        done_ttl_s: int | None = 7 * 24 * 3600,
    ) -> None:
        if max_deliveries < 1:
            raise ValueError("max_deliveries must be >= 1")
        self.redis, self.stream, self.group, self.model = redis, stream, group, model
        self._adapter: TypeAdapter[M] = TypeAdapter(model)
        self._model_name = _type_name(model)
        self.maxlen, self.max_deliveries = maxlen, max_deliveries
        self.claim_idle_ms, self.done_ttl_s = claim_idle_ms, done_ttl_s
        self.dead_stream = f"{stream}:dead"
        self._group_ready = False

    # -- producer ----------------------------------------------------------------------------
    async def publish(self, message: M, dedup_id: str | None = None) -> str:
        """Append a message; returns its entry id. ``dedup_id`` defaults to the entry id."""
        fields = {"data": message.model_dump_json(), "type": type(message).__name__, "ts": f"{time.time():.3f}"}
        if dedup_id is not None:
            fields["dedup_id"] = dedup_id
        entry_id = await self.redis.xadd(self.stream, fields, maxlen=self.maxlen, approximate=True)
        return _s(entry_id)

    # -- consumer ----------------------------------------------------------------------------
    async def ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            await self.redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    async def consume(self, consumer: str, count: int = 1, block_ms: int = 1000) -> list[Delivery[M]]:
        """Up to ``count`` messages for ``consumer``: reclaimed idle ones first, then new ones.

        Messages that exceeded ``max_deliveries`` or do not parse go to the dead-letter stream
        and are not returned.
        """
        await self.ensure_group()
        raw: list[tuple[str, dict, int]] = []
        _, claimed, deleted = await self._autoclaim(consumer, count)
        for entry_id in deleted:
            logger.warning("%s: pending entry %s was trimmed before it was acknowledged", self.stream, entry_id)
        for entry_id, fields in claimed:
            raw.append((_s(entry_id), _fields(fields), await self._delivery_count(_s(entry_id))))
        if len(raw) < count:
            reply = await self.redis.xreadgroup(
                self.group, consumer, {self.stream: ">"}, count=count - len(raw), block=block_ms or None
            )
            for _stream, entries in reply or []:
                for entry_id, fields in entries:
                    raw.append((_s(entry_id), _fields(fields), 1))
        out: list[Delivery[M]] = []
        for entry_id, fields, deliveries in raw:
            delivery = await self._decode(entry_id, fields, deliveries)
            if delivery is not None:
                out.append(delivery)
        return out

    async def pending(self, consumer: str, count: int = 10_000) -> list[Delivery[M]]:
        """This consumer's delivered, unacknowledged messages: what a restarted consumer of the same
        name still owes (XREADGROUP from id 0), oldest first."""
        await self.ensure_group()
        reply = await self.redis.xreadgroup(self.group, consumer, {self.stream: "0"}, count=count)
        out: list[Delivery[M]] = []
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                if not fields:  # trimmed from the stream while pending
                    continue
                delivery = await self._decode(_s(entry_id), _fields(fields), await self._delivery_count(_s(entry_id)))
                if delivery is not None:
                    out.append(delivery)
        return out

    async def ack(self, delivery: Delivery[M]) -> None:
        """Acknowledge after the side effect is durable, and mark the work done."""
        await self.ack_many([delivery.entry_id], [delivery.dedup_id])

    async def ack_many(self, entry_ids: Sequence[str], done_ids: Sequence[str] = ()) -> None:
        """Acknowledge ``entry_ids`` and mark ``done_ids`` done in one MULTI (a crash leaves both or neither).

        The two lists are independent and either may be empty: an entry whose work is dropped (a
        duplicate, a failed attempt) is acknowledged without a mark, and a mark may cover work whose
        entry was acknowledged before.
        """
        if not entry_ids and not done_ids:
            return
        async with self.redis.pipeline(transaction=True) as pipe:
            for dedup_id in done_ids:
                pipe.set(self._done_key(dedup_id), "1", ex=self.done_ttl_s)
            if entry_ids:
                pipe.xack(self.stream, self.group, *entry_ids)
            await pipe.execute()

    async def touch(self, consumer: str, delivery: Delivery[M]) -> None:
        """Heartbeat for a long job: reset its idle time so no other consumer reclaims it.

        XCLAIM with JUSTID does not count as a delivery, so heartbeats never push a live job
        towards the dead-letter stream.
        """
        await self.redis.xclaim(
            self.stream, self.group, consumer, min_idle_time=0, message_ids=[delivery.entry_id], justid=True
        )

    async def is_done(self, dedup_id: str) -> bool:
        """Whether the work ``dedup_id`` names was marked done (by ``ack`` or ``ack_many``)."""
        return bool(await self.redis.exists(self._done_key(dedup_id)))

    async def process(
        self,
        consumer: str,
        handler: Callable[[Delivery[M]], Awaitable[None]],
        *,
        count: int = 1,
        block_ms: int = 1000,
    ) -> int:
        """Consume once and run ``handler`` on each new message; returns how many were handled.

        Duplicates (dedup_id already done) are acknowledged without calling the handler. A handler
        that raises leaves its message pending: it is redelivered after ``claim_idle_ms`` and
        dead-lettered after ``max_deliveries``.
        """
        handled = 0
        for delivery in await self.consume(consumer, count=count, block_ms=block_ms):
            if await self.is_done(delivery.dedup_id):
                await self.ack_many([delivery.entry_id])
                logger.info("%s: skipped duplicate %s", self.stream, delivery.dedup_id)
                continue
            try:
                await handler(delivery)
            except Exception:
                logger.exception(
                    "%s: handler failed on %s (delivery %d)", self.stream, delivery.dedup_id, delivery.deliveries
                )
                continue
            await self.ack(delivery)
            handled += 1
        return handled

    # -- introspection -------------------------------------------------------------------------
    async def stats(self) -> dict[str, int]:
        """Queue depth for metrics: entries, pending (delivered, not acked), lag, dead letters."""
        await self.ensure_group()
        groups = await self.redis.xinfo_groups(self.stream)
        mine = next((g for g in groups if _s(g["name"]) == self.group), {})
        return {
            "length": await self.redis.xlen(self.stream),
            "pending": int(mine.get("pending", 0) or 0),
            "lag": int(mine.get("lag", 0) or 0),
            "dead": await self.redis.xlen(self.dead_stream),
        }

    async def dead_letters(self, count: int = 100) -> list[dict[str, Any]]:
        entries = await self.redis.xrange(self.dead_stream, count=count)
        return [{"entry_id": _s(eid), **_fields(f)} for eid, f in entries]

    # -- internals ----------------------------------------------------------------------------
    def _done_key(self, dedup_id: str) -> str:
        return f"{self.stream}:done:{dedup_id}"

    async def _autoclaim(self, consumer: str, count: int) -> tuple[str, list, list]:
        reply = await self.redis.xautoclaim(
            self.stream, self.group, consumer, min_idle_time=self.claim_idle_ms, start_id="0-0", count=count
        )
        next_id, claimed = reply[0], reply[1]
        deleted = [_s(x) for x in reply[2]] if len(reply) > 2 else []
        return _s(next_id), [(eid, f) for eid, f in claimed if f is not None], deleted

    async def _delivery_count(self, entry_id: str) -> int:
        info = await self.redis.xpending_range(self.stream, self.group, min=entry_id, max=entry_id, count=1)
        return int(info[0]["times_delivered"]) if info else 1

    async def _decode(self, entry_id: str, fields: dict[str, str], deliveries: int) -> Delivery[M] | None:
        dedup_id = fields.get("dedup_id") or entry_id
        if deliveries > self.max_deliveries:
            await self._dead_letter(entry_id, fields, f"delivered {deliveries} times (max {self.max_deliveries})")
            return None
        try:
            message = self._adapter.validate_json(fields.get("data", ""))
        except ValidationError as exc:
            await self._dead_letter(entry_id, fields, f"does not parse as {self._model_name}: {exc.errors()[:2]}")
            return None
        return Delivery(entry_id=entry_id, dedup_id=dedup_id, message=message, deliveries=deliveries)

    async def _dead_letter(self, entry_id: str, fields: dict[str, str], reason: str) -> None:
        logger.warning("%s: dead-lettering %s: %s", self.stream, entry_id, reason)
        record = {**fields, "origin_entry_id": entry_id, "reason": reason[:1000], "dead_at": f"{time.time():.3f}"}
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xadd(self.dead_stream, record, maxlen=self.maxlen, approximate=True)
            pipe.xack(self.stream, self.group, entry_id)
            await pipe.execute()


def _type_name(model: Any) -> str:
    """``RolloutResult``, or ``StepGroupJob | EvalJob`` for an (``Annotated``) union of models."""
    if isinstance(model, type):
        return model.__name__
    if get_origin(model) is Annotated:
        return _type_name(get_args(model)[0])
    if get_origin(model) in (Union, UnionType):
        return " | ".join(_type_name(arg) for arg in get_args(model))
    return repr(model)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _fields(fields: dict) -> dict[str, str]:
    return {_s(k): _s(v) for k, v in (fields or {}).items()}
