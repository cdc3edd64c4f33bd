"""The task contract every backend fulfils (BrowserGym's setup / validate / teardown, async).

A backend knows its tasks, where their site lives, which origins a session may reach, how to put
the site into a task's initial state (``setup``), how to read the site's final state (the /finish
JSON), and how to judge it (``validate``). Sessions never know which backend they run on.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from typing import Any
from urllib.parse import urlencode

from playwright.async_api import Page

from halo.schemas import ForkMethod, Task, ValidationResult
from halo.schemas.tasks import LeftOutTask
from halo.service import replace_lone_surrogates
from halo_env.page_js import READ_PRE_JSON


class TaskUnavailable(Exception):
    """The backend cannot serve tasks at all here (a package or a site is missing)."""


class TaskBackend(ABC):
    name: str = "backend"
    fork_method: ForkMethod = ForkMethod.SNAPSHOT

    @abstractmethod
    def handles(self, task_id: str) -> bool:
        """Whether ``task_id`` belongs to this backend (by its prefix)."""

    @abstractmethod
    def get_task(self, task_id: str) -> Task:
        """The task; ``KeyError`` when unknown."""

    @abstractmethod
    def list_tasks(self, domain: str | None = None) -> list[Task]: ...

    def left_out(self) -> list[LeftOutTask]:
        """REAL v2 tasks this backend is meant to serve but cannot, each with its reason."""
        return []

    @abstractmethod
    def site_url(self, task: Task) -> str:
        """Absolute URL of the task's app, ending with '/'."""

    def allowed_origins(self, task: Task) -> set[str]:
        return {self.site_url(task)}

    def config_url(self, task: Task, run_id: str, seed: int = 0) -> str:
        # The local clones take the episode's seed (layouts, data); without it every episode of a
        # moving-target task would show seed 0's layout.
        query = urlencode({"run_id": run_id, "task_id": task.id, "seed": seed})
        return f"{self.site_url(task).rstrip('/')}/config?{query}"

    def finish_url(self, task: Task) -> str:
        return f"{self.site_url(task).rstrip('/')}/finish"

    async def setup(self, page: Page, task: Task, run_id: str, seed: int = 0) -> None:
        """Reset the site to the task's initial state and show the app (REAL's /config protocol)."""
        await page.goto(self.config_url(task, run_id, seed), wait_until="load")

    async def finish_state(self, page: Page, task: Task, in_page: dict[str, Any] | None) -> dict[str, Any] | None:
        """The /finish JSON: the in-page ``__HALO__.finish()`` value when the site has one, else read
        from the /finish page in a second tab of the same context (what agisdk does)."""
        if in_page is not None and "error" not in in_page:
            return in_page
        return await read_finish_page(page, self.finish_url(task))

    @abstractmethod
    async def validate(
        self, task: Task, finish_state: dict[str, Any] | None, answer: str | None
    ) -> ValidationResult: ...

    async def teardown(self, page: Page) -> None:  # noqa: B027 - optional hook
        """Release anything ``setup`` took besides the context (nothing for the built-in backends)."""


async def read_finish_page(page: Page, url: str) -> dict[str, Any] | None:
    """Open ``url`` in a background tab of the page's context and parse the JSON in its <pre>."""
    tab = await page.context.new_page()
    try:
        await tab.goto(url, wait_until="load")
        text = None
        for _ in range(20):  # client-rendered /finish pages fill the <pre> after load
            text = await tab.evaluate(READ_PRE_JSON)
            if text:
                break
            await asyncio.sleep(0.1)
        if not text:
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        return replace_lone_surrogates(value) if isinstance(value, dict) else None
    finally:
        await tab.close()
