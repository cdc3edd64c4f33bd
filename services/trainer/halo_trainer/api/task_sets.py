"""A run's task set: the tasks it names, or else the domain's tasks whose site answers from here.

The default set is what a user gets without thinking about the network: on a machine without
internet a domain still lists REAL's hosted tasks, and every episode of one would be an
infrastructure failure. So the env service probes each distinct site origin once when the run is
created, and tasks on an origin that did not answer are left out, with one line saying which and
why (logged, in the run's status, printed by ``halo train``).

Tasks a user names explicitly are kept even when their site did not answer, with a warning in the
same line: naming them is how to bring them back (a probe with a short timeout can miss a site
that is slow or still starting, and the user may know better), and a run cannot be created with
an empty set either way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from halo.schemas import RunSpec
from halo.schemas.tasks import TaskReachability
from halo.transport import CallError

logger = logging.getLogger("halo.trainer.task_sets")

PROBE_TIMEOUT_S = 3.0  # per origin; all origins are probed concurrently
SHOWN = 12  # task ids named in the note before it says "and N more"


class TaskProbe(Protocol):
    """Where a run's tasks are listed and probed: the env's client, or a running cluster node's env
    (``api.node_services.NodeTaskProbe``)."""

    async def reachability(self, domain: str, timeout_s: float = ...) -> list[TaskReachability]: ...

    async def domains(self) -> list[str]: ...


class TaskSetError(Exception):
    """The run cannot be created with this task set; ``status`` is the HTTP answer (4xx or 503)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class TaskSet:
    tasks: list[str]
    left_out: list[TaskReachability] = field(default_factory=list)
    note: str | None = None


async def choose_tasks(env: TaskProbe, spec: RunSpec, timeout_s: float = PROBE_TIMEOUT_S) -> TaskSet:
    """The run's tasks: ``spec.tasks`` if named (all kept), else the domain's reachable tasks."""
    try:
        probed = await env.reachability(spec.domain, timeout_s)
    except CallError as exc:
        raise TaskSetError(503, f"cannot list and probe {spec.domain} tasks on the env service: {exc}") from exc
    if not probed:
        raise TaskSetError(422, f"no tasks for domain {spec.domain!r}{await _domains_there_are(env)}")
    by_id = {r.task_id: r for r in probed}
    if spec.tasks:
        unknown = sorted(set(spec.tasks) - set(by_id))
        if unknown:
            raise TaskSetError(422, f"unknown tasks for {spec.domain}: {', '.join(unknown[:5])}")
        unreachable = [by_id[t] for t in dict.fromkeys(spec.tasks) if not by_id[t].reachable]
        note = None
        if unreachable:
            note = (
                f"warning: {_count(unreachable, 'named task')} kept although the site did not answer "
                f"({_reasons(unreachable)}): {_ids(unreachable)}; expect infrastructure failures"
            )
            logger.warning("run on %s: %s", spec.domain, note)
        return TaskSet(list(spec.tasks), [], note)
    kept = [r.task_id for r in probed if r.reachable]
    left_out = [r for r in probed if not r.reachable]
    if not kept:
        raise TaskSetError(
            503,
            f"no {spec.domain} task is reachable from the env service ({_reasons(left_out)}); "
            "start the local clones (`halo stack up`) or name tasks explicitly",
        )
    note = None
    if left_out:
        note = (
            f"left out {len(left_out)} of {len(probed)} {spec.domain} tasks whose site did not answer "
            f"({_reasons(left_out)}): {_ids(left_out)}; name them with --task to bring them back"
        )
        logger.warning("run on %s: %s", spec.domain, note)
    return TaskSet(kept, left_out, note)


async def _domains_there_are(env: TaskProbe) -> str:
    """The domains the env's task registry has, as the end of the no-tasks message, so that a
    mistyped domain is answered with the right ones; nothing where the env cannot list them."""
    try:
        domains = await env.domains()
    except CallError:
        return ""
    return f"; the domains are {', '.join(domains)}" if domains else ""


def _count(rows: list[TaskReachability], what: str) -> str:
    return f"{len(rows)} {what}{'' if len(rows) == 1 else 's'}"


def _ids(rows: list[TaskReachability]) -> str:
    ids = [r.task_id for r in rows]
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more


def _reasons(rows: list[TaskReachability]) -> str:
    by_origin = {r.origin: r.reason for r in rows}
    return "; ".join(f"{origin}: {reason}" for origin, reason in sorted(by_origin.items()))
