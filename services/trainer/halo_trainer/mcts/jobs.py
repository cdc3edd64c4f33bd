"""A search job as a worker plays it: one MCTS search, its tree file, a result saying where it is.

Search jobs (``SearchJob``) travel on the same job stream as GRPO's rollout jobs, so they
get the same claiming, heartbeats, duplicate handling and infrastructure handling: a search that a
service broke comes back as a result with ``infra_error`` (never a tree to learn from), and the run
loop replaces it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from halo.schemas import RolloutResult, SearchJob, SearchOutcome
from halo.store import StoreError
from halo.transport import CallError
from halo_trainer.mcts.search import check_critic, search
from halo_trainer.rollout.play import RunStopped, Services, StopCheck

logger = logging.getLogger("halo.trainer.mcts")


async def run_search_job(
    svc: Services, job: SearchJob, runs_dir: Path, stopped: StopCheck | None = None
) -> RolloutResult:
    """Search ``job``'s task and seed with the run's settings; the tree goes to ``<runs_dir>/<run>/trees``,
    and to the same place in the head's folder when this worker's is not the head's (``head_store``):
    ``runs_dir`` is then this node's copy at the head's path, so ``tree_file`` names the head's file too."""
    started = time.perf_counter()
    result = RolloutResult(job_id=job.job_id, run_id=job.run_id, purpose=job.purpose, policy_version=job.policy.version)
    cfg = job.mcts  # required: a search job without its settings does not parse
    try:
        check_critic(cfg)  # e.g. the openai critic's key is not set where this worker runs
    except ValueError as exc:
        # A job no search can run: say so in the result (the loop fails the run on it), never crash the worker.
        result.infra_error = f"search job {job.job_id} cannot be searched here: {exc}"[:1000]
        return result
    try:
        found = await search(svc, job, cfg, Path(runs_dir) / job.run_id, stopped)
    except (CallError, RunStopped) as exc:
        logger.warning("search %s failed on infrastructure: %s", job.job_id, exc)
        result.infra_error = str(exc)[:1000]
    else:
        try:
            await _to_head(svc, job, found.path)
        except (StoreError, OSError, ValueError) as exc:
            # The head cannot learn from a tree it cannot read: an infrastructure failure, replaced.
            logger.warning("search %s: its tree did not reach the head: %s", job.job_id, exc)
            result.infra_error = f"the search tree did not reach the head: {exc}"[:1000]
        else:
            result.search = SearchOutcome(tree_file=str(found.path), metrics=found.metrics())
    result.elapsed_s = time.perf_counter() - started
    return result


async def _to_head(svc: Services, job: SearchJob, tree: Path) -> None:
    """Add the tree to the head's folder at the same relative path (nothing to do on a shared folder)."""
    if svc.head_store is None:
        return
    data = await asyncio.to_thread(tree.read_bytes)
    await asyncio.to_thread(svc.head_store.write_new, f"runs/{job.run_id}/trees/{tree.name}", data)
