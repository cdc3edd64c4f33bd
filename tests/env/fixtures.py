"""Test infrastructure for the env service: a static fixture site, a fixture task backend, and the
env service itself served by uvicorn in a background thread (real HTTP, real Chromium)."""

from __future__ import annotations

import asyncio
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from playwright.async_api import Page

from halo.schemas import ForkMethod, Task, ValidationResult, Website
from halo.settings.env import EnvSettings
from halo_env.app import create_app
from halo_env.backends.base import TaskBackend
from tests.conftest import free_port
from tests.http_stub import ServedInThread

PAGES = Path(__file__).parent / "pages"


class _Handler(SimpleHTTPRequestHandler):
    """Static files, plus REAL's extension-less routes: /<site>/config -> <site>/config.html."""

    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        target = super().translate_path(clean)
        if not Path(target).exists() and Path(target + ".html").is_file():
            return target + ".html"
        return target

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


class FixtureSite(ServedInThread):
    def __init__(self) -> None:
        super().__init__(partial(_Handler, directory=str(PAGES)))


class FixtureBackend(TaskBackend):
    """``fixture.<page>`` opens tests/env/pages/<page>.html; success = the counter reached 3."""

    name = "fixture"

    def __init__(self, site_url: str, fork_method: ForkMethod = ForkMethod.SNAPSHOT) -> None:
        self.url = site_url
        self.fork_method = fork_method

    def handles(self, task_id: str) -> bool:
        return task_id.startswith("fixture.")

    def get_task(self, task_id: str) -> Task:
        page = task_id.removeprefix("fixture.")
        if not (PAGES / f"{page}.html").is_file():
            raise KeyError(task_id)
        return Task(id=task_id, goal=f"Play with the {page} page", website=Website(id="fixture", url=f"/{page}.html"))

    def list_tasks(self, domain: str | None = None) -> list[Task]:
        if domain not in (None, "fixture"):
            return []
        return [self.get_task(f"fixture.{p.stem}") for p in sorted(PAGES.glob("*.html"))]

    def site_url(self, task: Task) -> str:
        return f"{self.url}/"

    async def setup(self, page: Page, task: Task, run_id: str, seed: int = 0) -> None:
        await page.goto(f"{self.url}{task.website.url}", wait_until="load")

    async def validate(self, task: Task, finish_state: dict | None, answer: str | None) -> ValidationResult:
        count = ((finish_state or {}).get("state") or {}).get("count")
        return ValidationResult(
            task_id=task.id, success=count == 3, reward=1.0 if count == 3 else 0.0, finish_state=finish_state
        )


class _Server(uvicorn.Server):
    async def serve(self, sockets: Any = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().serve(sockets)


class ThreadServer:
    """An ASGI app served by uvicorn on a free port, in a thread with its own event loop."""

    def __init__(self, app: Any, host: str, port: int) -> None:
        self.app = app
        self.url = f"http://{host}:{port}"
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        self.server = _Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def run_coro(self, coro: Any, timeout: float = 60) -> Any:
        """Run a coroutine on the service's own event loop (white-box checks)."""
        return asyncio.run_coroutine_threadsafe(coro, self.server.loop).result(timeout)

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the env service did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


class EnvServer(ThreadServer):
    """The env service."""

    def __init__(self, settings: EnvSettings, backends: list[TaskBackend] | None = None) -> None:
        self.settings = settings
        super().__init__(create_app(settings, backends), settings.host, settings.port)


def settings_for(data_dir: Path, **overrides: Any) -> EnvSettings:
    values: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": free_port(),
        "data_dir": data_dir,
        "max_browsers": 1,
        "max_contexts_per_browser": 12,
        "step_timeout_s": 8.0,
        "action_timeout_s": 2.0,
        "evaluate_timeout_s": 3.0,
        "navigation_timeout_s": 8.0,
        "settle_ms": 50,
        "session_ttl_s": 600,
        "reap_interval_s": 600,
    }
    values.update(overrides)
    return EnvSettings(**values)


def client(server: EnvServer, timeout: float = 60) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=timeout)
