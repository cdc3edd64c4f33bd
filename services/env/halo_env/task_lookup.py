"""Which backend serves a task id, and the tasks the backends offer, as the REST routes answer them.

``TaskLookup`` is a part of ``SessionManager`` (a mixin) over its ``backends``: an unknown id is a
404, a backend that cannot serve its tasks right now a 503, and a listing leaves such a backend out.
"""

from __future__ import annotations

import contextlib

from halo.schemas import Task
from halo.schemas.tasks import LeftOutTask
from halo.service import ServiceError
from halo_env.backends.base import TaskBackend, TaskUnavailable


class TaskLookup:
    """The task half of ``SessionManager``; see the module docstring."""

    backends: list[TaskBackend]

    def backend_for(self, task_id: str) -> TaskBackend:
        for backend in self.backends:
            if backend.handles(task_id):
                return backend
        raise ServiceError(404, f"unknown task {task_id!r}: no backend serves this id (use local.* or v2.*)")

    def task(self, task_id: str) -> tuple[TaskBackend, Task]:
        backend = self.backend_for(task_id)
        try:
            return backend, backend.get_task(task_id)
        except KeyError:
            raise ServiceError(404, f"unknown task {task_id!r}") from None
        except TaskUnavailable as exc:
            raise ServiceError(503, str(exc)) from None

    def tasks(self, domain: str | None) -> list[Task]:
        out: list[Task] = []
        for backend in self.backends:
            with contextlib.suppress(TaskUnavailable):
                out.extend(backend.list_tasks(domain))
        return out

    def left_out(self) -> list[LeftOutTask]:
        out: list[LeftOutTask] = []
        for backend in self.backends:
            with contextlib.suppress(TaskUnavailable):
                out.extend(backend.left_out())
        return out
