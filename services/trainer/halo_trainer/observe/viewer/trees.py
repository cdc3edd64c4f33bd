"""The search trees of an MCTS run as the viewer shows them: ``<run>/trees/<search>.json``.

A tree's nodes come with what the search knew of each (visits, the composite ``q``, ``q_mcts``,
the critic's ``q_critic``, the edge's reward, terminal and success), its best path, and the
preference pairs the iteration trained on: the run's ``theta`` applied by ``SearchTree.preference_pairs``
(``halo.schemas``), the very function the DPO step uses, so the page shows the pairs the learner saw.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from halo.schemas import SearchTree
from halo_trainer.observe.viewer.folders import RunFolders, missing


def _tree_files(folder: Path) -> dict[str, Path]:
    """The run's tree files by search id (only these names can be asked for: no path in a request)."""
    trees = folder / "trees"
    return {p.stem: p for p in sorted(trees.glob("*.json"))} if trees.is_dir() else {}


def _theta(folder: Path) -> float:
    mcts = json.loads((folder / "config.json").read_text()).get("run", {}).get("mcts") or {}
    return float(mcts.get("theta", 0.1))


def tree_summary(search_id: str, record: SearchTree) -> dict[str, Any]:
    return {
        "search_id": search_id,
        "task_id": record.task_id,
        "size": len(record.nodes),
        "simulations": record.simulations,
        "env_steps": record.env_steps,
        # A success reached in a rollout is not a node: the file shows only those ended at a node.
        "success_at_a_node": any(n.success for n in record.nodes),
        "best_path": record.best_path or record.most_visited_path(),
    }


def tree_router(runs: RunFolders) -> APIRouter:
    router = APIRouter(prefix="/ui", tags=["viewer"])

    @router.get("/api/runs/{run_id}/trees")
    async def trees(run_id: str) -> Response:
        if (folder := runs.folder(run_id)) is None:
            return missing(f"no run {run_id!r} in this viewer's run folders")
        out = []
        for search_id, path in _tree_files(folder).items():
            try:
                out.append(tree_summary(search_id, SearchTree.read(path)))
            except ValueError:
                continue  # a file being written, or not a tree: left out of the list
        return JSONResponse(out)

    @router.get("/api/runs/{run_id}/trees/{search_id}")
    async def tree(run_id: str, search_id: str) -> Response:
        if (folder := runs.folder(run_id)) is None:
            return missing(f"no run {run_id!r} in this viewer's run folders")
        path = _tree_files(folder).get(search_id)
        if path is None:
            return missing(f"run {run_id!r} has no search tree {search_id!r}")
        try:
            loaded = SearchTree.read(path)
        except ValueError as exc:
            return missing(str(exc))
        theta = _theta(folder)
        pairs = [
            {
                "node": p.node,
                "chosen": p.chosen,
                "rejected": p.rejected,
                "chosen_q": p.chosen_q,
                "rejected_q": p.rejected_q,
            }
            for p in loaded.preference_pairs(theta)
        ]
        return JSONResponse(
            {
                **tree_summary(search_id, loaded),
                "goal": loaded.goal,
                "theta": theta,
                "pairs": pairs,
                "nodes": [
                    n.model_dump(
                        mode="json", exclude={"completion_token_ids", "behaviour_logprobs", "prompt_token_ids"}
                    )
                    for n in loaded.nodes
                ],
            }
        )

    return router
