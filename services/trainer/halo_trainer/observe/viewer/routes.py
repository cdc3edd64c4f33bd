"""The run viewer's routes (``/ui``): read-only, from run folders and the screenshot store alone.

Everything it shows comes from files a run writes (status.json, config.json, metrics.jsonl,
eval.jsonl, episodes.jsonl, train_tasks.jsonl with eval.jsonl's per-task counts: ``task_success.py``,
an MCTS run's trees/*.json: ``trees.py``), evaluation folders
(``evals.py``) and screenshots by hash, so a finished run copied from another machine
is shown the same way (``python -m halo_trainer.observe.viewer <run folder>``). Inside the trainer the
page also listens to the run API's server-sent events (``/runs/{id}/events``) and redraws, and its
run controls (start, stop, promote) call the run API itself: every mutation goes through the API's
own validation and bearer token, none through these routes.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Response
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from halo import modes as agent_modes
from halo.screenshots import ScreenshotStore
from halo_trainer.observe.episode_log import read_episodes
from halo_trainer.observe.filmstrip import draw_action
from halo_trainer.observe.viewer.evals import EvalFolders, eval_router
from halo_trainer.observe.viewer.folders import RunFolders, finite, json_lines, missing
from halo_trainer.observe.viewer.task_success import task_router
from halo_trainer.observe.viewer.trees import tree_router

STATIC = Path(__file__).parent / "static"


def summary(folder: Path) -> dict[str, Any]:
    """What the runs page lists: state, progress, algorithm, domain, version, the latest metrics."""
    config = json.loads((folder / "config.json").read_text()).get("run", {})
    status = json.loads((folder / "status.json").read_text()) if (folder / "status.json").exists() else {}
    return {
        "run_id": folder.name,
        "state": status.get("state", "unknown"),
        "algorithm": config.get("algorithm"),
        "domain": config.get("domain"),
        "episodes_done": status.get("episodes_done", 0),
        "episodes_total": status.get("episodes_total", config.get("episodes")),
        "updates": status.get("updates", 0),
        "policy_version": status.get("policy_version", 0),
        "latest_metrics": finite(status.get("latest_metrics", {})),
        "error": status.get("error"),
        "created_at": status.get("created_at"),
        "phase": status.get("phase"),  # what a running run is doing now (RunStatus.phase)
    }


def adapter_versions(folder: Path) -> list[int]:
    adapters = folder / "adapters"
    if not adapters.is_dir():
        return []
    return sorted(int(p.name[1:]) for p in adapters.glob("v*") if p.name[1:].isdigit() and p.is_dir())


def viewer_router(runs: RunFolders, store: ScreenshotStore, *, live: bool, token_required: bool = False) -> APIRouter:
    """``live``: the run API (``/runs/{id}/events``, start, stop, promote) is served beside the viewer;
    ``token_required``: its mutations need the bearer token (the page asks for it, never this route)."""
    router = APIRouter(prefix="/ui", tags=["viewer"])
    index = (STATIC / "index.html").read_text()

    @router.get("", include_in_schema=False)
    @router.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(index)

    @router.get("/api/info")
    async def info() -> dict[str, Any]:
        return {"live": live, "token_required": token_required}

    @router.get("/api/runs")
    async def list_runs() -> list[dict[str, Any]]:
        return [summary(f) for f in runs.folders()]

    @router.get("/api/runs/{run_id}")
    async def run(run_id: str) -> Response:
        if (folder := runs.folder(run_id)) is None:
            return missing(f"no run {run_id!r} in this viewer's run folders")
        return JSONResponse({**summary(folder), "config": json.loads((folder / "config.json").read_text())})

    @router.get("/api/runs/{run_id}/adapters")
    async def adapters(run_id: str) -> Response:
        """The adapter versions the run saved, and the agent mode its algorithm's adapters go to."""
        if (folder := runs.folder(run_id)) is None:
            return missing(f"no run {run_id!r} in this viewer's run folders")
        algorithm = json.loads((folder / "config.json").read_text()).get("run", {}).get("algorithm")
        mode = next((m.name for m in agent_modes.MODES.values() if m.algorithm and m.algorithm == algorithm), None)
        return JSONResponse({"versions": adapter_versions(folder), "mode": mode})

    @router.get("/api/runs/{run_id}/metrics")
    async def metrics(run_id: str) -> Response:
        if (folder := runs.folder(run_id)) is None:
            return missing(f"no run {run_id!r} in this viewer's run folders")
        return JSONResponse(
            {"metrics": json_lines(folder / "metrics.jsonl"), "eval": json_lines(folder / "eval.jsonl")}
        )

    @router.get("/api/runs/{run_id}/episodes")
    async def episodes(run_id: str) -> Response:
        if (folder := runs.folder(run_id)) is None:
            return missing(f"no run {run_id!r} in this viewer's run folders")
        keys = ("episode_id", "job_id", "task_id", "purpose", "update", "policy_version", "success")
        return JSONResponse(
            [
                {**{k: r[k] for k in keys}, "episode_return": r["episode_return"], "steps": len(r["steps"])}
                for r in read_episodes(folder / "episodes.jsonl")
            ]
        )

    def _episode(run_id: str, episode_id: str) -> dict[str, Any] | JSONResponse:
        if (folder := runs.folder(run_id)) is None:
            return missing(f"no run {run_id!r} in this viewer's run folders")
        record = next((r for r in read_episodes(folder / "episodes.jsonl") if r["episode_id"] == episode_id), None)
        return record if record is not None else missing(f"run {run_id!r} recorded no episode {episode_id!r}")

    @router.get("/api/runs/{run_id}/episodes/{episode_id}")
    async def episode(run_id: str, episode_id: str) -> Response:
        record = _episode(run_id, episode_id)
        return record if isinstance(record, JSONResponse) else JSONResponse(record)

    @router.get("/api/runs/{run_id}/episodes/{episode_id}/frames/{step}/{candidate}.png")
    async def frame(run_id: str, episode_id: str, step: int, candidate: int) -> Response:
        """The screenshot a candidate acted on, with its action drawn."""
        record = _episode(run_id, episode_id)
        if isinstance(record, JSONResponse):
            return record
        steps = {s["step"]: s for s in record["steps"]}
        if step not in steps or not 0 <= candidate < len(steps[step]["candidates"]):
            return missing(f"episode {episode_id!r} has no step {step} candidate {candidate}")
        chosen = steps[step]["candidates"][candidate]
        try:
            png = store.get(steps[step]["screenshot"])
        except (FileNotFoundError, ValueError):
            return missing(f"screenshot {steps[step]['screenshot'][:16]}... is not in the screenshot store")
        out = io.BytesIO()
        draw_action(png, chosen["action"], chosen["action_text"]).save(out, format="PNG")
        return Response(out.getvalue(), media_type="image/png")

    @router.get("/api/screenshots/{sha256}.png")
    async def screenshot(sha256: str) -> Response:
        try:
            return (
                FileResponse(store.path(sha256), media_type="image/png")
                if store.exists(sha256)
                else missing(f"screenshot {sha256[:16]}... is not in the screenshot store")
            )
        except ValueError:
            return missing("not a screenshot hash")

    return router


def mount_viewer(
    app: FastAPI,
    runs: RunFolders,
    store: ScreenshotStore,
    *,
    live: bool,
    evals_dir: Path | None = None,
    token_required: bool = False,
) -> None:
    """``evals_dir``: the evaluations' folder (EvalSettings.results_dir); None shows none."""
    app.include_router(viewer_router(runs, store, live=live, token_required=token_required))
    app.include_router(tree_router(runs))
    app.include_router(task_router(runs))
    app.include_router(eval_router(EvalFolders(evals_dir)))
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="viewer-static")
