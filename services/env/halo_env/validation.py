"""Validating an episode: the site's finish state, read from the page, judged by the task's backend.

Used by ``SessionManager`` at the end of an episode (the step that ends it) and on demand
(``POST /sessions/{id}/validate``). An evaluator that fails makes the task "not evaluable"
(``success=None``), never a failed task or a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from halo.schemas import ValidationResult
from halo.service import replace_lone_surrogates
from halo_env.session import Session

# The manager's logger: evaluator failures were always logged as the session loop's.
logger = logging.getLogger("halo.env.sessions")


async def read_site_state(page: Page, timeout_s: float) -> dict[str, Any] | None:
    """The clone's own finish state (``window.__HALO__.finish()``), or None where it has none or
    the page does not answer."""
    site_state = None
    with contextlib.suppress(PlaywrightError, TimeoutError):
        raw = await asyncio.wait_for(
            page.evaluate("() => window.__HALO__ ? window.__HALO__.finish() : null"),
            timeout_s,
        )
        site_state = replace_lone_surrogates(raw) if isinstance(raw, dict) else None
    return site_state


async def validate_session(
    session: Session, site_state: dict[str, Any] | None, finish_timeout_s: float
) -> ValidationResult:
    """The session's result: the backend's finish state (within ``finish_timeout_s``) and answer, judged."""
    task, backend = session.task, session.backend
    try:
        finish = await asyncio.wait_for(backend.finish_state(session.lease.page, task, site_state), finish_timeout_s)
    except (PlaywrightError, TimeoutError) as exc:
        return ValidationResult(task_id=task.id, success=None, reward=0.0, details=[f"/finish unreadable: {exc}"])
    try:
        return await backend.validate(task, finish, session.answer)
    except Exception as exc:  # an evaluator failure is "not evaluable", never a failed task or a 500
        logger.exception("validation of %s failed", task.id)
        return ValidationResult(
            task_id=task.id,
            success=None,
            reward=0.0,
            details=[f"evaluator error: {type(exc).__name__}: {str(exc)[:200]}"],
            finish_state=finish,
        )
