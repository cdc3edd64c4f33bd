"""The run routes: create, list, read, stop, a run's metrics and its event stream.

They validate, refuse a mutation that is not the user's own (``guard``) and hand over to
``RunManager`` (``app.state.manager``, set by the app's lifespan); a refusal is its 4xx.
"""

from __future__ import annotations

import asyncio
import json

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from halo.schemas import RunEvent, RunSpec, RunState, RunStatus
from halo.service import ServiceError as HTTPError
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.guard import mutation_guard
from halo_trainer.api.runs import RunManager, RunRefused
from halo_trainer.observe.metrics import MetricsLog


def runs_router(settings: TrainerSettings) -> APIRouter:
    router = APIRouter(tags=["runs"])
    authorize = mutation_guard(settings)

    def manager(request: Request) -> RunManager:
        return request.app.state.manager

    async def known_run(run_id: str, mgr: RunManager) -> RunStatus:
        status = await mgr.registry.get(run_id)
        if status is None:
            raise HTTPError(404, f"no run {run_id!r}")
        return status

    @router.post("/runs", status_code=201, response_model=RunStatus, dependencies=[Depends(authorize)])
    async def create_run(spec: RunSpec, request: Request) -> RunStatus:
        try:
            return await manager(request).create(spec)
        except RunRefused as exc:
            raise HTTPError(exc.status, str(exc)) from exc

    @router.get("/runs", response_model=list[RunStatus])
    async def list_runs(request: Request) -> list[RunStatus]:
        return await manager(request).registry.all()

    @router.get("/runs/{run_id}", response_model=RunStatus)
    async def get_run(run_id: str, request: Request) -> RunStatus:
        return await known_run(run_id, manager(request))

    @router.post("/runs/{run_id}/stop", response_model=RunStatus, dependencies=[Depends(authorize)])
    async def stop_run(run_id: str, request: Request) -> RunStatus:
        mgr = manager(request)
        status = await known_run(run_id, mgr)
        await mgr.stop(run_id)
        return status

    @router.get("/runs/{run_id}/metrics")
    async def run_metrics(run_id: str, request: Request) -> list[dict]:
        status = await known_run(run_id, manager(request))
        return MetricsLog(f"{status.run_dir}/metrics.jsonl").read()

    @router.get("/runs/{run_id}/events")
    async def run_events(run_id: str, request: Request) -> StreamingResponse:
        """Server-sent events: every status change of the run, then `done`, then the stream closes.

        A run that is over (stopped, finished, failed) and not training here gets its `done` even
        when its log holds none (a run marked stopped while no trainer ran it).
        """
        mgr = manager(request)
        await known_run(run_id, mgr)
        over = {RunState.STOPPED, RunState.FINISHED, RunState.FAILED}

        async def stream():
            last: str | None = None
            while not await request.is_disconnected():
                events = await mgr.registry.events(run_id, 0)
                # The log is capped (oldest trimmed), so positions shift: resume after the last event
                # sent, found by content (each status event carries its own timestamp).
                fresh = events
                if last is not None and last in events:
                    fresh = events[len(events) - events[::-1].index(last) :]
                for event in fresh:
                    last = event
                    kind = json.loads(event)["kind"]
                    yield f"event: {kind}\ndata: {event}\n\n"
                    if kind == "done":
                        return
                status = await mgr.registry.get(run_id)
                if not fresh and run_id not in mgr.active and (status is None or status.state in over):
                    state = status.state.value if status is not None else "unknown"
                    final = RunEvent(run_id=run_id, kind="done", data={"state": state}).model_dump_json()
                    yield f"event: done\ndata: {final}\n\n"
                    return
                await asyncio.sleep(1.0)

        return StreamingResponse(stream(), media_type="text/event-stream")

    return router
