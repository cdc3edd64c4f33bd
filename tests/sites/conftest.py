"""Fixtures for the clone tests: the real clone server on a free port, real Chromium."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import uvicorn

from halo.settings.env import DEFAULT_CHROMIUM_ARGS
from halo_sites.app import create_app
from tests.conftest import free_port

CHROMIUM = "/usr/bin/chromium"
# Chromium exactly as the environment service launches it (pixel-deterministic repaints: the fork
# tests compare screenshots byte for byte).
CHROMIUM_ARGS = list(DEFAULT_CHROMIUM_ARGS)
VIEWPORT = {"width": 1280, "height": 720}


@pytest.fixture(scope="session")
def sites_url() -> Iterator[str]:
    """The clone server, in a thread of this process."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the clone server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
async def browser() -> AsyncIterator:
    if not shutil.which(CHROMIUM):
        pytest.skip("Chromium is not installed")
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        await b.close()


async def open_site(browser, sites_url: str, site: str, task_id: str | None = None, seed: int = 0):
    """A new context on ``/<site>/config`` (the task's initial state); page errors kept in ``page.errors``."""
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    query = f"?seed={seed}" + (f"&task_id={task_id}" if task_id else "")
    await page.goto(f"{sites_url}/{site}/config{query}")
    await page.wait_for_url(f"{sites_url}/{site}/**")
    await page.wait_for_load_state("load")
    page.errors = errors  # type: ignore[attr-defined]
    return context, page


async def click(page, halo_id: str) -> None:
    await page.locator(f'[data-halo-id="{halo_id}"]').click()


async def type_into(page, halo_id: str, text: str) -> None:
    await click(page, halo_id)
    await page.keyboard.type(text)


async def site_state(page) -> dict:
    return await page.evaluate("window.__HALO__.finish()")
