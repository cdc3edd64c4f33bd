"""The task catalogue: the tasks the backends serve, those left out offline, and their sites' reachability."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from halo.schemas import Task
from halo.schemas.tasks import LeftOutTask, TaskReachability
from halo_env.backends.reachability import reachability
from halo_env.routes.state import Manager

router = APIRouter(prefix="/tasks", tags=["tasks"])


@router.get("", response_model=list[Task])
async def tasks(
    m: Manager, domain: Annotated[str | None, Query(max_length=40, pattern=r"^[a-z0-9_\-]+$")] = None
) -> list[Task]:
    return m.tasks(domain)


@router.get("/left-out", response_model=list[LeftOutTask])
async def tasks_left_out(m: Manager) -> list[LeftOutTask]:
    """REAL v2 tasks that do not run offline here, each with its reason (never faked)."""
    return m.left_out()


@router.get("/reachability", response_model=list[TaskReachability])
async def tasks_reachability(
    m: Manager,
    domain: Annotated[str, Query(min_length=1, max_length=40, pattern=r"^[a-z0-9_\-]+$")],
    timeout_s: Annotated[float, Query(gt=0, le=30)] = 3.0,
) -> list[TaskReachability]:
    """Whether each of the domain's tasks' sites answers from here (one probe per origin)."""
    return await reachability(m.tasks(domain), m.backend_for, timeout_s)
