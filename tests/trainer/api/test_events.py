"""`GET /runs/<id>/events`: every event, then `done`, then the stream closes (real Redis, the real app)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import redis.asyncio as aioredis

from halo.schemas import RunEvent, RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.api.app import create_app
from halo_trainer.api.registry import EVENTS_KEPT
from halo_trainer.api.runs import RunManager

CLOSE_S = 60  # a guard: a stream that never closes fails here instead of hanging the suite


def status(run_id: str, state: RunState) -> RunStatus:
    now = time.time()
    return RunStatus(run_id=run_id, state=state, spec=RunSpec(domain="playground"), created_at=now, updated_at=now)


def events_of(body: str) -> list[tuple[str, dict]]:
    out = []
    for block in body.strip().split("\n\n"):
        kind, data = block.split("\n", 1)
        out.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


async def app_client(redis_url: str, tmp_path) -> tuple[httpx.AsyncClient, RunManager, aioredis.Redis]:
    # The app's lifespan (workers, auto-resume) is not started: the route needs the run registry only.
    settings = TrainerSettings()
    app = create_app(settings)
    redis = aioredis.from_url(redis_url)
    manager = RunManager(settings, redis, None, ScreenshotStore(tmp_path / "shots"), env=None)
    app.state.manager = manager
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer")
    return client, manager, redis


async def test_a_stopped_run_without_a_done_event_gets_one_and_the_stream_closes(clean_redis, tmp_path):
    client, manager, redis = await app_client(clean_redis, tmp_path)
    # Marked stopped while no trainer ran it (what `resume_interrupted` does): no `done` in its log.
    await manager.registry.save(status("r-stopped", RunState.RUNNING))
    await manager.registry.save(status("r-stopped", RunState.STOPPED))
    response = await asyncio.wait_for(client.get("/runs/r-stopped/events"), CLOSE_S)
    got = events_of(response.text)
    assert [k for k, _ in got] == ["status", "status", "done"]
    assert got[-1][1]["data"] == {"state": "stopped"}
    await client.aclose()
    await redis.aclose()


async def test_a_long_run_stopped_while_watched_ends_its_stream_even_past_the_event_cap(clean_redis, tmp_path):
    client, manager, redis = await app_client(clean_redis, tmp_path)
    run_id = "r-long"
    for _ in range(EVENTS_KEPT):  # a full log: every new event now pushes the oldest out
        await manager.registry.save(status(run_id, RunState.RUNNING))
    manager.active[run_id] = (None, asyncio.Event())  # training in this trainer

    async def train_then_stop() -> None:
        await asyncio.sleep(1.5)  # the stream has sent what was there and waits for more
        for _ in range(100):
            await manager.registry.save(status(run_id, RunState.RUNNING))
        final = status(run_id, RunState.STOPPED)
        del manager.active[run_id]
        await manager.registry.save(final)
        await redis.rpush(
            keys.events(run_id), RunEvent(run_id=run_id, kind="done", data={"state": "stopped"}).model_dump_json()
        )

    trainer = asyncio.create_task(train_then_stop())
    response = await asyncio.wait_for(client.get(f"/runs/{run_id}/events"), CLOSE_S)
    await trainer
    got = events_of(response.text)
    assert got[-1] == ("done", got[-1][1]) and got[-1][1]["data"] == {"state": "stopped"}
    assert got[-2][1]["data"]["state"] == "stopped"  # the events after the cap were not skipped
    assert len(got) == EVENTS_KEPT + 100 + 2
    assert sum(k == "done" for k, _ in got) == 1
    await client.aclose()
    await redis.aclose()


async def test_a_phase_change_is_stored_and_sent_as_a_small_phase_event(clean_redis, tmp_path):
    """A run reports its phase several times an update: the stored status has it (GET /runs/<id>,
    what `halo train` polls), and the event carries the phase alone, not a whole status."""
    from halo.schemas import RunPhase

    client, manager, redis = await app_client(clean_redis, tmp_path)
    run = status("r-phase", RunState.RUNNING)
    await manager.registry.save(run)
    phase = RunPhase(kind="evaluating", label="evaluating v0", done=7, total=32, unit="episodes", started_at=1.0)
    run.phase = phase
    await manager.registry.save(run, phase_only=True)
    assert (await client.get("/runs/r-phase")).json()["phase"] == phase.model_dump(mode="json")
    run.state, run.phase = RunState.FINISHED, None
    await manager.registry.save(run, done=True)
    stored = [json.loads(e) for e in await manager.registry.events("r-phase", 0)]
    assert [e["kind"] for e in stored] == ["status", "phase", "status", "done"]
    assert stored[1]["data"] == phase.model_dump(mode="json")  # the phase alone: no metrics, no spec
    response = await asyncio.wait_for(client.get("/runs/r-phase/events"), CLOSE_S)
    assert [k for k, _ in events_of(response.text)] == ["status", "phase", "status", "done"]
    await client.aclose()
    await redis.aclose()
