"""REAL benchmark tasks (``v2.<site>-<n>``) from agisdk's registry, judged by agisdk's evaluator.

Reset follows agisdk's own ``setup``: ``<site>/config?run_id=..&task_id=..&latency=0``, the
/finish page once (it records the initial state), then the app. The final state is the JSON in
/finish's <pre>, and success comes from agisdk's ``WebCloneEvaluator`` (script and jmespath evals).
``llm_boolean`` evals need an OpenAI key: without one they are skipped, and a task whose other
evals pass is reported as not evaluable (``success=None``), never as a failure.

Every site's base URL is configurable (``real_base_url`` / ``real_site_urls``): the hosted sites
cannot be reached from the development machines, and tests point the backend at a local server
that speaks the same /config and /finish protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
import os
from typing import Any
from urllib.parse import urlencode

from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from halo.schemas import ForkMethod, Task, ValidationResult
from halo.settings.env import EnvSettings
from halo_env import registry
from halo_env.backends.base import TaskBackend

logger = logging.getLogger("halo.env.real")


def _quiet_agisdk_console() -> None:
    """agisdk's evaluator prints the whole state through a rich console on stdout; send it nowhere."""
    from agisdk.REAL.logging import logger as rich_logger

    if getattr(rich_logger, "_halo_quiet", False):
        return
    from rich.console import Console

    rich_logger.console = Console(file=open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process
    rich_logger._halo_quiet = True


class RealBackend(TaskBackend):
    name = "real"

    def __init__(self, settings: EnvSettings) -> None:
        self._base_url = settings.real_base_url.rstrip("/")
        self._site_urls = dict(settings.real_site_urls)
        self._key_env = settings.openai_api_key_env
        self.fork_method = ForkMethod(settings.real_fork_method)

    def handles(self, task_id: str) -> bool:
        return task_id.startswith(f"{registry.VERSION}.")

    def get_task(self, task_id: str) -> Task:
        return registry.get_real_task(task_id)

    def list_tasks(self, domain: str | None = None) -> list[Task]:
        return registry.load_real_tasks(domain)

    def site_url(self, task: Task) -> str:
        site = task.domain
        if site in self._site_urls:
            return self._site_urls[site].rstrip("/") + "/"
        if self._base_url:
            return f"{self._base_url}/{site}/"
        return task.website.url.rstrip("/") + "/"

    def config_url(self, task: Task, run_id: str, seed: int = 0) -> str:
        # REAL's /config has no seed: its tasks have one fixed initial state each.
        query = urlencode({"run_id": run_id, "task_id": task.id, "latency": 0})
        return f"{self.site_url(task).rstrip('/')}/config?{query}"

    async def setup(self, page: Page, task: Task, run_id: str, seed: int = 0) -> None:
        await page.goto(self.config_url(task, run_id, seed), wait_until="load")
        with contextlib.suppress(
            PlaywrightTimeoutError
        ):  # agisdk waits for networkidle; a chatty site never gets there
            await page.wait_for_load_state("networkidle", timeout=5_000)
        await page.goto(self.finish_url(task), wait_until="load")
        await page.goto(self.site_url(task), wait_until="load")

    async def validate(self, task: Task, finish_state: dict[str, Any] | None, answer: str | None) -> ValidationResult:
        if finish_state is None:
            return ValidationResult(task_id=task.id, success=None, reward=0.0, details=["/finish gave no JSON state"])
        return await asyncio.to_thread(self._evaluate, task, finish_state, answer)

    def _evaluate(self, task: Task, finish_state: dict[str, Any], answer: str | None) -> ValidationResult:
        from agisdk.REAL.browsergym.webclones.task_config import TaskConfig

        version, name = registry.split_id(task.id)
        return evaluate_with_agisdk(
            TaskConfig(name, version), task.id, finish_state, answer, bool(os.environ.get(self._key_env)), self._key_env
        )


def evaluate_with_agisdk(
    config: Any, task_id: str, finish_state: dict[str, Any], answer: str | None, llm_available: bool, key_env: str
) -> ValidationResult:
    """Judge ``finish_state`` with agisdk's WebCloneEvaluator on an agisdk ``TaskConfig``.

    Without an LLM key the ``llm_boolean`` evals are left out; if everything else passes the verdict
    is None (not evaluable here), if anything else fails it is False.
    """
    _quiet_agisdk_console()
    from agisdk.REAL.browsergym.webclones.evaluate import WebCloneEvaluator

    evals = config.get_evals()
    skipped = [e for e in evals if e.type == "llm_boolean" and not llm_available]
    if skipped:
        # The same evaluator, minus the evals it cannot run here.
        config = copy.copy(config)
        config.task = dataclasses.replace(config.task, evals=[e for e in evals if e not in skipped])
    points, _, _, info = WebCloneEvaluator(task_config=config).evaluate(finish_state, answer or "")
    details = []
    for ev, (ok, extra) in zip(config.get_evals(), info["results"], strict=True):
        what = ev.script or ev.query or ev.type
        outcome = (extra.get("output") or extra.get("error") or extra) if isinstance(extra, dict) else extra
        details.append(f"{'ok' if ok else 'failed'}: {what}: {str(outcome)[:300]}")
    passed = all(ok for ok, _ in info["results"])
    if skipped:
        details.append(f"not evaluable here: {len(skipped)} llm_boolean eval(s) need {key_env}")
    success: bool | None = None if skipped and passed else passed
    reward = float(points) if success else 0.0
    logger.info("validated %s: success=%s (%s)", task_id, success, "; ".join(details)[:300])
    return ValidationResult(task_id=task_id, success=success, reward=reward, details=details, finish_state=finish_state)
