"""A page on another origin, in real Chromium, tries every way a page has to change a run.

The trainer's own app (real run manager, Redis of the module's own) listens on 127.0.0.1; the other
page is served from ``localhost`` on another port, another origin as far as the browser is
concerned (and the same private address space, so nothing but the run API's own checks stands in
the way). Its script sends what a browser lets any page send without a CORS preflight (fetch in
no-cors mode with no, text or Blob bodies, a form post in a hidden frame) and what needs one (JSON,
a bearer header). The trainer records every request that reached it: the simple ones arrive and are
refused, the preflighted ones never arrive as POSTs, and nothing changed, with and without a token.
The issue's own curl command is sent to the same served app too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from pydantic import SecretStr

from halo.policy_client import PolicyClient
from halo.schemas import RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.env import DEFAULT_CHROMIUM_ARGS
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.api.app import create_app
from halo_trainer.api.runs import RunManager
from tests.trainer.observe.test_viewer_routes import write_run
from tests.trainer.serve_app import serve
from tests.trainer.stand_ins import EnvStandIn

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CHROMIUM = "/usr/bin/chromium"
TOKEN = "browser-guard-token"
RUN = "victim-run"

# Each attempt: [name, path, fetch options]; "form" posts a text/plain form into a hidden frame.
ATTEMPTS_JS = """
async (args) => {
  const { trainer, run, token } = args;
  const body = JSON.stringify({ domain: "playground", tasks: ["local.playground-1"] });
  const attempts = [
    ["stop, no body", `/runs/${run}/stop`, { method: "POST", mode: "no-cors" }],
    ["stop, text/plain", `/runs/${run}/stop`, { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: "{}" }],
    ["runs, Blob without a type", "/runs", { method: "POST", mode: "no-cors", body: new Blob([body]) }],
    ["runs, text/plain", "/runs", { method: "POST", mode: "no-cors", body }],
    ["promote, text/plain", "/runs/grpo-run/promote", { method: "POST", mode: "no-cors", body: "{}" }],
    ["stop, JSON (preflighted)", `/runs/${run}/stop`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" }],
    ["runs, JSON (preflighted)", "/runs", { method: "POST", headers: { "Content-Type": "application/json" }, body }],
    ["stop, bearer (preflighted)", `/runs/${run}/stop`, { method: "POST", headers: { Authorization: `Bearer ${token}` } }],
  ];
  const outcome = {};
  for (const [name, path, options] of attempts) {
    try {
      const response = await fetch(trainer + path, options);
      outcome[name] = response.type === "opaque" ? "sent (answer hidden)" : `answered ${response.status}`;
    } catch (error) {
      outcome[name] = `blocked: ${error.message}`;
    }
  }
  for (const path of [`/runs/${run}/stop`, "/runs"]) {
    const frame = document.createElement("iframe");
    frame.name = `sink-${path.length}`;
    document.body.append(frame);
    const form = document.createElement("form");
    Object.assign(form, { method: "POST", action: trainer + path, enctype: "text/plain", target: frame.name });
    const input = document.createElement("input");
    Object.assign(input, { name: '{"domain": "playground", "x": "', value: '"}' });
    form.append(input);
    document.body.append(form);
    const loaded = new Promise((resolve) => frame.addEventListener("load", resolve, { once: true }));
    form.submit();
    await loaded;
    outcome[`form to ${path}`] = "sent";
  }
  return outcome;
}
"""


@dataclass
class Target:
    url: str
    redis_url: str
    evals: EvalSettings
    seen: list[tuple[str, str, int]] = field(default_factory=list)  # (method, path, status) the trainer answered


def recording(app, seen: list):
    """The app, with every request it answers noted (the page cannot read the answers)."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)

        async def noting(message):
            if message["type"] == "http.response.start":
                seen.append((scope["method"], scope["path"], message["status"]))
            await send(message)

        return await app(scope, receive, noting)

    return wrapped


@pytest.fixture(params=["", TOKEN], ids=["no-token", "token"])
def target(request, own_redis_url: str, tmp_path: Path) -> Iterator[Target]:
    redis.Redis.from_url(own_redis_url).flushdb()
    settings = TrainerSettings(data_dir=tmp_path, redis_url=own_redis_url, api_token=SecretStr(request.param))
    evals = EvalSettings(data_dir=tmp_path, checkpoints_dir=tmp_path / "checkpoints")
    write_run(settings.runs_dir, "grpo-run", "grpo", (1, 2))
    status = RunStatus(
        run_id=RUN, state=RunState.RUNNING, spec=RunSpec(domain="playground"), created_at=1, updated_at=1
    )
    redis.Redis.from_url(own_redis_url).hset(keys.RUNS, RUN, status.model_dump_json())
    env = EnvStandIn({"local.playground-1": True})
    manager = RunManager(
        settings,
        aioredis.from_url(own_redis_url),
        PolicyClient("http://127.0.0.1:9", "halo-base"),
        ScreenshotStore(tmp_path / "shots"),
        env,
    )
    app = create_app(settings, evals)
    app.state.manager = manager
    seen: list = []
    with serve(recording(app, seen), lifespan="off") as url:
        yield Target(url, own_redis_url, evals, seen)


def other_origin(trainer_url: str) -> FastAPI:
    page = FastAPI()

    @page.get("/")
    async def index() -> HTMLResponse:
        return HTMLResponse(f"<!doctype html><title>another site</title><p>{trainer_url}</p>")

    return page


async def test_a_page_on_another_origin_cannot_stop_start_or_promote(target: Target) -> None:
    if not shutil.which(CHROMIUM):
        pytest.skip("Chromium is not installed")
    from playwright.async_api import async_playwright

    with serve(other_origin(target.url)) as other:
        other = other.replace("127.0.0.1", "localhost")  # another origin than the trainer's
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(DEFAULT_CHROMIUM_ARGS))
            try:
                page = await browser.new_page()
                await page.goto(other)
                outcome = await page.evaluate(ATTEMPTS_JS, {"trainer": target.url, "run": RUN, "token": TOKEN})
            finally:
                await browser.close()
    report = json.dumps({"outcome": outcome, "seen": target.seen}, indent=1)
    # The simple requests were sent and reached the trainer; the preflighted ones were blocked by the browser.
    assert outcome["stop, no body"] == "sent (answer hidden)", report
    assert all(v.startswith("blocked") for k, v in outcome.items() if "preflighted" in k), report
    posts = [(path, status) for method, path, status in target.seen if method == "POST"]
    assert len(posts) == 7, report  # 5 no-cors fetches and 2 forms; no preflighted POST ever arrived
    assert all(status == 403 for _, status in posts), report
    # And nothing changed.
    client = redis.Redis.from_url(target.redis_url)
    assert not client.sismember(keys.STOPPED_RUNS, RUN), report
    assert list(client.hkeys(keys.RUNS)) == [RUN.encode()], report
    assert not (target.evals.checkpoints_dir / "qwen3vl_grpo_lora").exists(), report


def test_the_issues_curl_request_is_refused(target: Target) -> None:
    """The reported request, as it was sent: `curl -X POST .../stop -H 'Origin: ...' -H 'Content-Type: text/plain'`."""
    if not shutil.which("curl"):
        pytest.skip("curl is not installed")
    for headers in (["-H", "Origin: http://evil.example", "-H", "Content-Type: text/plain"], []):
        out = subprocess.run(
            [
                "curl",
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-X",
                "POST",
                f"{target.url}/runs/{RUN}/stop",
                *headers,
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.stdout == ("403" if headers else "415"), (headers, out.stdout, out.stderr)
    assert not redis.Redis.from_url(target.redis_url).sismember(keys.STOPPED_RUNS, RUN)
