"""The project's offline clones (``local.<site>-<n>``, and REAL's own v2 tasks on them,
``real-offline.<site>-<n>``), served by ``halo_sites`` on the sites port.

Tasks and their evaluation come from ``halo_sites.tasks`` (``get_task``, ``load_tasks``,
``evaluate``, which runs agisdk's own WebCloneEvaluator). The clones keep all their state in the
browser, so sessions fork by snapshot.
"""

from __future__ import annotations

import asyncio
import importlib
from types import ModuleType
from typing import Any

from halo.schemas import ForkMethod, Task, ValidationResult
from halo.schemas.tasks import LeftOutTask
from halo_env.backends.base import TaskBackend, TaskUnavailable

PREFIXES = ("local.", "real-offline.")


class LocalCloneBackend(TaskBackend):
    name = "local"
    fork_method = ForkMethod.SNAPSHOT

    def __init__(self, sites_url: str, tasks_module: str = "halo_sites.tasks") -> None:
        self.sites_url = sites_url.rstrip("/")
        self._module_name = tasks_module
        self._module: ModuleType | None = None

    def _tasks(self) -> ModuleType:
        if self._module is None:
            try:
                module = importlib.import_module(self._module_name)
            except ImportError as exc:
                raise TaskUnavailable(f"local clone tasks are unavailable: {exc}") from exc
            missing = [f for f in ("get_task", "load_tasks", "evaluate") if not hasattr(module, f)]
            if missing:
                raise TaskUnavailable(f"{self._module_name} lacks {', '.join(missing)}")
            self._module = module
        return self._module

    def handles(self, task_id: str) -> bool:
        return task_id.startswith(PREFIXES)

    def get_task(self, task_id: str) -> Task:
        return self._tasks().get_task(task_id)

    def list_tasks(self, domain: str | None = None) -> list[Task]:
        return list(self._tasks().load_tasks(domain))

    def left_out(self) -> list[LeftOutTask]:
        left = getattr(self._tasks(), "real_offline_left_out", dict)()
        return [
            LeftOutTask(task_id=f"v2.{name}", site=name.rsplit("-", 1)[0], reason=why) for name, why in left.items()
        ]

    def site_url(self, task: Task) -> str:
        path = task.website.url if task.website.url.startswith("/") else f"/{task.website.url}"
        return f"{self.sites_url}{path}".rstrip("/") + "/"

    async def validate(self, task: Task, finish_state: dict[str, Any] | None, answer: str | None) -> ValidationResult:
        if finish_state is None:
            return ValidationResult(
                task_id=task.id, success=None, reward=0.0, details=["the site exposed no /finish state"]
            )
        return await asyncio.to_thread(self._tasks().evaluate, task, finish_state, answer)
