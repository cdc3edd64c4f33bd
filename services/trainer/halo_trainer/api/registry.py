"""Runs' status in Redis, the API's source of truth, with each run's event log (what viewers follow).

``status.json`` in the run's folder is a copy, for a folder read without Redis (the viewer, a run
copied elsewhere).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import redis.asyncio as aioredis
from pydantic import ValidationError

from halo.schemas import RunEvent, RunStatus
from halo_trainer import keys

EVENTS_KEPT = 500
logger = logging.getLogger("halo.trainer.runs")


class RunRegistry:
    def __init__(self, redis: aioredis.Redis, runs_dir: Path) -> None:
        self.redis, self.runs_dir = redis, Path(runs_dir)

    async def save(self, status: RunStatus, *, done: bool = False, phase_only: bool = False) -> None:
        """``done``: the run's end; its ``done`` event goes in the same transaction, so a watcher
        never sees the final status without it. ``phase_only``: only ``status.phase`` changed, and
        the event carries the phase alone: a run reports its phase several times an update, and the
        event log (500 kept) is what every watching viewer reads back each second."""
        status.updated_at = time.time()
        data = status.model_dump_json()
        kind, payload = ("phase", json.loads(data)["phase"] or {}) if phase_only else ("status", json.loads(data))
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(keys.RUNS, status.run_id, data)
            pipe.rpush(
                keys.events(status.run_id), RunEvent(run_id=status.run_id, kind=kind, data=payload).model_dump_json()
            )
            if done:
                end = RunEvent(run_id=status.run_id, kind="done", data={"state": status.state.value})
                pipe.rpush(keys.events(status.run_id), end.model_dump_json())
            pipe.ltrim(keys.events(status.run_id), -EVENTS_KEPT, -1)
            await pipe.execute()
        if status.run_dir:
            path = Path(status.run_dir) / "status.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(data)

    async def get(self, run_id: str) -> RunStatus | None:
        raw = await self.redis.hget(keys.RUNS, run_id)
        return RunStatus.model_validate_json(raw) if raw else None

    async def all(self) -> list[RunStatus]:
        runs = []
        for run_id, value in (await self.redis.hgetall(keys.RUNS)).items():
            try:
                runs.append(RunStatus.model_validate_json(value))
            except ValidationError as exc:
                # A record this trainer's schema cannot read (a newer trainer's, on a shared Redis):
                # listed by the trainer that wrote it, never a reason for this one not to start.
                first = exc.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                name = run_id.decode() if isinstance(run_id, bytes) else run_id
                logger.warning("run %s: its status record is not readable here (%s: %s)", name, where, first["msg"])
        return sorted(runs, key=lambda r: r.created_at, reverse=True)

    async def events(self, run_id: str, start: int) -> list[str]:
        return [e.decode() for e in await self.redis.lrange(keys.events(run_id), start, -1)]
