"""``POST /runs/{run_id}/promote``: a run's adapter version to its agent mode, through
``halo.modes.promote_run``, the function ``halo modes promote --run`` calls, so the API and the CLI
copy, record and name an adapter the same way.

The run is found by its folder (a finished run copied in is not in Redis), never by a path from
the request. Everything the request gets wrong is a 4xx with the reason: an unknown run (404), a
mode that does not exist, takes no adapter or serves the other algorithm, a version the run never
saved (422).
"""

from __future__ import annotations

import asyncio
import json

from fastapi import APIRouter, Depends

from halo import modes as agent_modes
from halo.schemas.promotion import PromoteRequest, PromoteResponse
from halo.service import ServiceError
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.guard import mutation_guard
from halo_trainer.observe.viewer.folders import RunFolders


def run_algorithm(settings: EvalSettings, run_id: str) -> str | None:
    folder = RunFolders(settings.runs_dir).folder(run_id)
    if folder is None:
        # Not the runs folder's path: where the server keeps its files is none of a client's business.
        raise ServiceError(404, f"no run {run_id!r} on this trainer")
    try:
        return json.loads((folder / "config.json").read_text()).get("run", {}).get("algorithm")
    except (OSError, ValueError) as exc:
        raise ServiceError(422, f"run {run_id!r} has no readable config.json: {exc}") from exc


def mode_for(algorithm: str | None) -> str | None:
    return next((m.name for m in agent_modes.MODES.values() if m.algorithm and m.algorithm == algorithm), None)


def promote_version(settings: EvalSettings, run_id: str, request: PromoteRequest) -> PromoteResponse:
    algorithm = run_algorithm(settings, run_id)
    name = request.mode or mode_for(algorithm)
    if name is None:
        raise ServiceError(422, f"run {run_id!r} is a {algorithm} run: no agent mode serves its adapter")
    try:
        mode = agent_modes.get_mode(name)
        target = agent_modes.promote_run(name, run_id, request.version, settings)
        _, served = agent_modes.promoted_adapter(mode, settings)
        record = agent_modes.promotion_record(mode, settings) or {}
    except agent_modes.ModeError as exc:
        raise ServiceError(422, str(exc)) from exc
    return PromoteResponse(
        mode=mode.name,
        run_id=run_id,
        version=int(record.get("version") or 0),
        target=str(target),
        source=str(record.get("source", "")),
        sha256=str(record.get("sha256", "")),
        served_as=served,
    )


def promotion_router(settings: TrainerSettings, evals: EvalSettings) -> APIRouter:
    router = APIRouter(tags=["runs"])

    @router.post(
        "/runs/{run_id}/promote", response_model=PromoteResponse, dependencies=[Depends(mutation_guard(settings))]
    )
    async def promote_run(run_id: str, body: PromoteRequest) -> PromoteResponse:
        """Copy the run's adapter version (default: its newest) to its mode (default: its algorithm's),
        as `halo modes promote <mode> --run <run_id> [--version k]` does."""
        return await asyncio.to_thread(promote_version, evals, run_id, body)

    return router
