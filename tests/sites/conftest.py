"""Fixtures for the clone tests: the real clone server on a free port, real Chromium."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import uvicorn

from halo.schemas import Action
from halo.settings.env import DEFAULT_CHROMIUM_ARGS
from halo_sites.app import create_app
from halo_sites.tasks import evaluate, get_task
from tests.conftest import REDIS_URL, free_port, start_service, stop_services

CHROMIUM = "/usr/bin/chromium"
# Chromium exactly as the environment service launches it (pixel-deterministic repaints: the fork
# tests compare screenshots byte for byte).
CHROMIUM_ARGS = list(DEFAULT_CHROMIUM_ARGS)
VIEWPORT = {"width": 1280, "height": 720}


def replay_sample(task_ids: list[str]) -> set[str]:
    """What `make test` replays: every Playground task (the learning probes and end-to-end runs
    train on them) and each other site's first, middle and last task by number (``local.gomail-3``
    is gomail's 3); `make test-replay` replays every task (the others are marked full_replay)."""
    by_site: dict[str, list[str]] = {}
    for task_id in task_ids:
        by_site.setdefault(task_id.split(".", 1)[1].rsplit("-", 1)[0], []).append(task_id)
    sample = set(by_site.pop("playground", []))
    for ids in by_site.values():
        ids.sort(key=lambda t: int(t.rsplit("-", 1)[1]))
        sample |= {ids[0], ids[len(ids) // 2], ids[-1]}
    return sample


def replay_params(task_ids: list[str]) -> list:
    """``task_ids`` as parameters, those outside ``replay_sample`` marked full_replay."""
    sample = replay_sample(task_ids)
    return [pytest.param(t, marks=() if t in sample else pytest.mark.full_replay) for t in task_ids]


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


async def fork_page(browser, context, page):
    """What the environment's snapshot fork does: the context's storage and the page's URL in a fresh context."""
    fork = await browser.new_context(viewport=VIEWPORT, storage_state=await context.storage_state())
    forked = await fork.new_page()
    await forked.goto(page.url)
    await forked.wait_for_load_state("load")
    return fork, forked


async def click(page, halo_id: str) -> None:
    await page.locator(f'[data-halo-id="{halo_id}"]').click()


async def type_into(page, halo_id: str, text: str) -> None:
    await click(page, halo_id)
    await page.keyboard.type(text)


async def play_solution(page, actions: list[dict]) -> str | None:
    """A reference solution's element-id actions played with Playwright as the env plays them (click
    the element; type after clicking it; keys joined with "+"), without the env service; its answer."""
    answer = None
    for a in actions:
        if a["action"] == "left_click":
            await click(page, a["element_id"])
        elif a["action"] == "type":
            await type_into(page, a["element_id"], a["text"])
        elif a["action"] == "key":
            await page.keyboard.press("+".join(a["keys"]))
        elif a["action"] == "answer":
            answer = a["text"]
    return answer


async def settled_screenshot(page) -> bytes:
    """The page's screenshot once it has nothing left to paint: ``load`` fired, web fonts ready,
    every image decoded, two animation frames later. Straight after a click a re-rendering list
    can be caught half painted on a loaded machine, and the same-seed tests below compare bytes."""
    await page.wait_for_load_state("load")
    await page.evaluate(
        """async () => {
            await document.fonts.ready;
            await Promise.all([...document.images].map((i) => (i.complete ? null : i.decode().catch(() => null))));
            await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
        }"""
    )
    return await page.screenshot()


def screen_difference(a: bytes, b: bytes) -> str | None:
    """None when two screenshots are byte-identical, else what differs, readable in a failure
    (the pixels and their bounding box) instead of two PNGs' bytes."""
    if a == b:
        return None
    import io

    from PIL import Image, ImageChops

    first, second = Image.open(io.BytesIO(a)).convert("RGB"), Image.open(io.BytesIO(b)).convert("RGB")
    if first.size != second.size:
        return f"sizes differ: {first.size} vs {second.size}"
    diff = ImageChops.difference(first, second)
    box = diff.getbbox()
    if box is None:
        return "the same pixels, other PNG bytes"
    changed = sum(1 for px in diff.crop(box).getdata() if px != (0, 0, 0))
    return f"{changed} pixels differ, within the box {box} (left, top, right, bottom)"


async def site_state(page) -> dict:
    return await page.evaluate("window.__HALO__.finish()")


def local_task_success(site: str, task_n: int, state: dict, answer: str | None = None) -> bool | None:
    """The verdict of ``local.<site>-<task_n>``'s eval on a hand-made /finish state."""
    return evaluate(get_task(f"local.{site}-{task_n}"), state, answer).success


@pytest.fixture(scope="session")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    if importlib.util.find_spec("halo_env") is None:
        pytest.skip("the environment service (halo_env) is not installed")
    if not shutil.which("/usr/bin/chromium"):
        pytest.skip("Chromium is not installed")
    procs: list[subprocess.Popen] = []
    data_dir = tmp_path_factory.mktemp("env-data")
    try:
        sites_port, env_port = free_port(), free_port()
        sites_url, env_url = f"http://127.0.0.1:{sites_port}", f"http://127.0.0.1:{env_port}"
        procs.append(start_service("halo_sites", {"HALO_SITES_PORT": str(sites_port)}, f"{sites_url}/ready"))
        env_vars = {
            "HALO_ENV_PORT": str(env_port),
            "HALO_ENV_SITES_URL": sites_url,
            "HALO_REDIS_URL": REDIS_URL,
            "HALO_DATA_DIR": str(data_dir),
        }
        procs.append(start_service("halo_env", env_vars, f"{env_url}/ready"))
        client = httpx.Client(base_url=env_url, timeout=120)
        if client.post("/sessions", json={}).status_code in (404, 405):
            pytest.skip("the environment service has no sessions API yet")
        yield client
        client.close()
    finally:
        stop_services(procs)


def replay(env: httpx.Client, task_id: str, actions: list[Action], check_reset: bool, seed: int = 0) -> dict:
    r = env.post("/sessions", json={"task_id": task_id, "max_steps": len(actions) + 5, "seed": seed})
    assert r.status_code == 200, r.text
    session = r.json()["observation"]["session_id"]
    try:
        if check_reset:
            at_reset = env.post(f"/sessions/{session}/validate")
            assert at_reset.status_code == 200, at_reset.text
            assert at_reset.json()["success"] is False, f"{task_id}: already solved at reset"
        last: dict = {}
        for i, action in enumerate(actions):
            step = env.post(f"/sessions/{session}/step", json={"action": action.model_dump(mode="json")})
            assert step.status_code == 200, step.text
            last = step.json()
            error = last["observation"].get("last_action_error")
            assert error is None, f"{task_id} step {i} {action.short()}: {error}"
        assert last["terminated"] is True, f"{task_id}: the episode did not end with the last action"
        return last
    finally:
        env.delete(f"/sessions/{session}")
