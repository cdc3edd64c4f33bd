"""Whether tasks' sites answer from here: one HTTP probe per distinct origin, not per task.

A machine without internet lists REAL's hosted tasks all the same; every session opened on one of
them is an infrastructure failure. The trainer asks this once when a run is created and leaves such
tasks out of the run's default task set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from halo.schemas import Task
from halo.schemas.tasks import TaskReachability
from halo_env.backends.base import TaskBackend


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def probe_origin(client: httpx.AsyncClient, origin: str, timeout_s: float) -> str:
    """``""`` when the origin answers HTTP at all (any status: the server is there), else why not."""
    try:
        await client.get(origin + "/", timeout=timeout_s)
    except httpx.TimeoutException:
        return f"no answer within {timeout_s:g} s"
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {str(exc)[:200] or 'connection failed'}"
    return ""


async def reachability(
    tasks: list[Task], backend_for: Callable[[str], TaskBackend], timeout_s: float
) -> list[TaskReachability]:
    """Each task's reachability, probing each distinct origin once and all of them concurrently."""
    located = []
    for task in tasks:
        backend = backend_for(task.id)
        located.append((task, backend, origin_of(backend.site_url(task))))
    origins = sorted({origin for _, _, origin in located})
    # No redirects: an answer of any kind shows the site is there; where it points does not matter.
    async with httpx.AsyncClient(follow_redirects=False) as client:
        answers = await asyncio.gather(*(probe_origin(client, o, timeout_s) for o in origins))
    reasons = dict(zip(origins, answers, strict=True))
    return [
        TaskReachability(
            task_id=task.id, backend=backend.name, origin=origin, reachable=not reasons[origin], reason=reasons[origin]
        )
        for task, backend, origin in located
    ]
