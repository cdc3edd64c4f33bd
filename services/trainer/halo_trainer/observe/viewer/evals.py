"""The evaluations as the viewer shows them: ``<data_dir>/eval/<id>/`` folders written by
``halo eval`` (``halo_trainer.evaluation.matrix``), read here and never written.

Only the files are read (results.json, plan.json, episodes.jsonl): importing the evaluation code
would load the rollout and learner modules, and the API process starts without torch
(tests/test_import_rules.py). An evaluation still playing has no results.json yet; its recorded
episodes are listed all the same.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from halo_trainer.observe.viewer.folders import RUN_ID, missing, whole_records

SUMMARY_KEYS = ("mode", "task", "seed", "site", "scored", "success", "return", "steps", "valid_actions")


def _clean(value: Any) -> Any:
    """results.json may hold NaN (json.dumps writes it); JSON answers cannot: null instead."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _json(path: Path) -> Any:
    try:
        return _clean(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None  # absent, or being written: the page says what is missing


def episode_lines(folder: Path) -> list[dict[str, Any]]:
    """The evaluation's episode records in file order; a line cut short by an interruption is skipped
    (``halo eval`` drops and replays it on resume), so a record's index is its place among the rest."""
    return [_clean(record) for record in whole_records(folder / "episodes.jsonl")]


class EvalFolders:
    """Evaluation folders under ``root`` (EvalSettings.results_dir); ``None``: the viewer shows none."""

    def __init__(self, root: Path | None) -> None:
        self.root = Path(root) if root is not None else None

    def folders(self) -> list[Path]:
        if self.root is None or not self.root.is_dir():
            return []
        found = [
            p
            for p in self.root.iterdir()
            if p.is_dir() and any((p / f).is_file() for f in ("results.json", "plan.json", "episodes.jsonl"))
        ]
        return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)

    def folder(self, eval_id: str) -> Path | None:
        if not RUN_ID.match(eval_id) or eval_id in (".", ".."):
            return None
        return next((p for p in self.folders() if p.name == eval_id), None)


def eval_summary(folder: Path) -> dict[str, Any]:
    results = _json(folder / "results.json")
    plan = (results or {}).get("plan") or _json(folder / "plan.json") or {}
    return {
        "eval_id": folder.name,
        "finished": results is not None,
        "modes": plan.get("modes", []),
        "tasks": len(plan.get("tasks", [])),
        "episodes": len(episode_lines(folder)),
        "created": (folder / "plan.json").stat().st_mtime if (folder / "plan.json").is_file() else None,
        "pass_at_1": {m: s.get("rate") for m, s in (results or {}).get("modes", {}).items()},
    }


def eval_router(evals: EvalFolders) -> APIRouter:
    router = APIRouter(prefix="/ui", tags=["viewer"])

    def _folder(eval_id: str) -> Path | JSONResponse:
        folder = evals.folder(eval_id)
        return folder if folder is not None else missing(f"no evaluation {eval_id!r} in {evals.root}")

    @router.get("/api/evals")
    async def list_evals() -> list[dict[str, Any]]:
        return [eval_summary(f) for f in evals.folders()]

    @router.get("/api/evals/{eval_id}")
    async def evaluation(eval_id: str) -> Response:
        folder = _folder(eval_id)
        if isinstance(folder, JSONResponse):
            return folder
        results = _json(folder / "results.json")
        plan = (results or {}).get("plan") or _json(folder / "plan.json") or {}
        return JSONResponse({**eval_summary(folder), "plan": plan, "results": results})

    @router.get("/api/evals/{eval_id}/episodes")
    async def episodes(eval_id: str, mode: str | None = None, site: str | None = None) -> Response:
        """The records of one matrix cell: ``mode`` and ``site`` filter (left out: every one)."""
        folder = _folder(eval_id)
        if isinstance(folder, JSONResponse):
            return folder
        out = []
        for index, r in enumerate(episode_lines(folder)):
            if (mode is None or r.get("mode") == mode) and (site is None or r.get("site") == site):
                out.append(
                    {
                        "index": index,
                        **{k: r.get(k) for k in SUMMARY_KEYS},
                        "infra_failures": r.get("infra_failures", 0),
                        "actions": r.get("actions", []),
                        "screenshots": len(r.get("screenshots") or []),
                    }
                )
        return JSONResponse(out)

    @router.get("/api/evals/{eval_id}/episodes/{index}")
    async def episode(eval_id: str, index: int) -> Response:
        folder = _folder(eval_id)
        if isinstance(folder, JSONResponse):
            return folder
        records = episode_lines(folder)
        if not 0 <= index < len(records):
            return missing(f"evaluation {eval_id!r} has no episode {index} (it has {len(records)})")
        return JSONResponse({"index": index, **records[index]})

    return router
