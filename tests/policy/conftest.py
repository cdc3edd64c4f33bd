"""Fixtures of the policy tests: the vLLM servers with other settings than the session's, a real screenshot.

Every server is started exactly as the local stack starts it (``python -m halo_policy``) on a free
port; tests that need one are marked ``vllm``. The session's default server is ``vllm_server`` in
tests/conftest.py. The bfloat16 server and the tower-LoRA server are started once for this package
(each start takes about 27 s on two cores), and stopped after its last test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import lifetime
from tests.conftest import REDIS_URL, free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVER_START_TIMEOUT_S = 600


def start_policy_server(model_dir: Path | str, log_path: Path, **env_overrides: str) -> tuple[subprocess.Popen, int]:
    """``python -m halo_policy`` on a free port, as the local stack starts it; output to ``log_path``."""
    port = free_port()
    env = dict(os.environ)
    env.update(
        HALO_POLICY_PORT=str(port),
        HALO_POLICY_MODEL=str(model_dir),
        HALO_POLICY_TARGET="cpu",
        HALO_POLICY_MAX_LORA_RANK="8",
        HALO_REDIS_URL=REDIS_URL,  # where it advertises its capabilities: the tests' database
    )
    env.update(env_overrides)
    with open(log_path, "wb") as log:
        proc = lifetime.popen(
            [sys.executable, "-m", "halo_policy"],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, port


def wait_listening(proc: subprocess.Popen, log_path: Path, timeout_s: float = SERVER_START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while b"policy server listening on" not in log_path.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log_path.read_bytes().decode("utf-8", "replace")[-3000:]
            pytest.fail(f"vLLM did not start (exit {proc.poll()}); last output:\n{tail}")
        time.sleep(0.5)


def stop_policy_server(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# Not the tiny processor's default (longest_edge 448*256): a 1280x720 screenshot gets fewer image
# tokens than its 98, so a learner that ignored the setting would rebuild another prompt.
MAX_PIXELS = 64_000


@contextlib.contextmanager
def policy_server(model_dir: Path | str, log_path: Path, **env_overrides: str):
    """A listening server's port; stopped at the end, with vLLM's last output when it died meanwhile."""
    proc, port = start_policy_server(model_dir, log_path, **env_overrides)
    try:
        wait_listening(proc, log_path)
        yield port
        if proc.poll() is not None:  # it died while the tests used it: show why
            tail = log_path.read_bytes().decode("utf-8", "replace")[-6000:]
            sys.stderr.write(f"\nvLLM exited with {proc.returncode} during the tests; last output:\n{tail}\n")
    finally:
        stop_policy_server(proc)


@pytest.fixture(scope="package")
def bf16_server(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """vLLM in bfloat16 with an image budget of its own (``HALO_POLICY_MAX_PIXELS``)."""
    from halo.settings.policy import PolicySettings

    log_path = tmp_path_factory.mktemp("vllm-bf16") / "server.log"
    env = {"HALO_POLICY_DTYPE": "bfloat16", "HALO_POLICY_MAX_PIXELS": str(MAX_PIXELS)}
    with policy_server(tiny_model_dir, log_path, **env) as port:
        yield PolicySettings(
            port=port, model=str(tiny_model_dir), max_lora_rank=8, dtype="bfloat16", max_pixels=MAX_PIXELS
        )


@pytest.fixture(scope="package")
def tower_server(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """vLLM with LoRA on the vision tower and merger (``HALO_POLICY_TOWER_LORA``); with its log."""
    from halo.settings.policy import PolicySettings

    log_path = tmp_path_factory.mktemp("vllm-tower") / "server.log"
    with policy_server(tiny_model_dir, log_path, HALO_POLICY_TOWER_LORA="true") as port:
        yield PolicySettings(port=port, model=str(tiny_model_dir), max_lora_rank=8), log_path


PAGE = """<!doctype html><html><head><style>
body{font-family:sans-serif;margin:0;background:#f6f8fc}
header{height:64px;background:#fff;display:flex;align-items:center;padding:0 24px;border-bottom:1px solid #ddd}
nav{position:absolute;top:64px;left:0;width:240px;bottom:0;padding:16px}
button{background:#c2e7ff;border:0;border-radius:16px;padding:16px 24px;font-size:16px}
main{margin-left:260px;padding:16px}.row{background:#fff;padding:12px;border-bottom:1px solid #eee}
</style></head><body><header><b>GoMail</b><input placeholder="Search mail" style="margin-left:80px;width:600px;padding:10px"></header>
<nav><button data-halo-id="compose">Compose</button><p>Inbox 12</p><p>Starred</p><p>Sent</p></nav>
<main><div class="row"><b>Alice</b> Quarterly report - numbers attached</div>
<div class="row"><b>Bob</b> Lunch on Friday?</div><div class="row"><b>Carol</b> Your order has shipped</div></main>
</body></html>"""


@pytest.fixture(scope="session")
def screenshot_png() -> bytes:
    """A real 1280x720 Chromium screenshot of a mail-like page."""
    import asyncio

    from playwright.async_api import async_playwright

    async def shoot() -> bytes:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=os.environ.get("HALO_CHROMIUM", "/usr/bin/chromium"),
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                ],
            )
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 720})
                await page.set_content(PAGE)
                return await page.screenshot(type="png")
            finally:
                await browser.close()

    return asyncio.run(shoot())
