"""Capture a session's browser state and rebuild it in a fresh context (fork, restore, recovery).

State = cookies + localStorage and sessionStorage of the page's origin + URL, plus what the DOM
holds that storage does not (scroll positions, edited form fields, focus and text selection) and
where the mouse is. Rebuilding it: cookies into the context, storage seeded on a blank document
served at the site's own origin (so the app's scripts never run before their storage is in place),
then the real URL is loaded and the DOM details re-applied.
"""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import Route

from halo.schemas import Snapshot
from halo_env.page_js import CAPTURE, QUIET_POINTER_OFF, QUIET_POINTER_ON, RESTORE_PAGE, SEED_STORAGE
from halo_env.pool import Lease

_BLANK = "<!doctype html><html><head><title></title></head><body></body></html>"


async def capture(
    lease: Lease, evaluate_timeout_s: float, pointer: tuple[float | None, float | None]
) -> dict[str, Any]:
    """The page's state right now (see module docstring)."""
    page = await asyncio.wait_for(lease.page.evaluate(CAPTURE), evaluate_timeout_s)
    cookies = await asyncio.wait_for(lease.context.cookies(), evaluate_timeout_s)
    return {"url": lease.page.url, "cookies": cookies, "page": page, "pointer": list(pointer)}


async def restore(lease: Lease, state: dict[str, Any]) -> None:
    """Rebuild ``state`` in ``lease``'s (fresh or cleared) context; bounded by the context's timeouts."""
    page, context = lease.page, lease.context
    if state.get("cookies"):
        await context.add_cookies(state["cookies"])

    dom = state.get("page") or {}
    origin = dom.get("origin")
    if origin and origin != "null" and (dom.get("local") or dom.get("session")):
        blank = f"{origin}/__halo_restore__"

        async def serve_blank(route: Route) -> None:
            await route.fulfill(status=200, content_type="text/html", body=_BLANK)

        await page.route(blank, serve_blank)
        try:
            await page.goto(blank, wait_until="load")
            await page.evaluate(SEED_STORAGE, {"local": dom.get("local", {}), "session": dom.get("session", {})})
        finally:
            await page.unroute(blank, serve_blank)
    await page.goto(state["url"], wait_until="load")
    await page.evaluate(RESTORE_PAGE, dom)
    x, y = (state.get("pointer") or [None, None])[:2]
    if x is not None and y is not None:
        # Hover styles need the cursor in place; the page must not see it arrive (see QUIET_POINTER_ON).
        await page.evaluate(QUIET_POINTER_ON)
        try:
            await page.mouse.move(x, y)
        finally:
            await page.evaluate(QUIET_POINTER_OFF)


def to_snapshot(
    state: dict[str, Any], task_id: str, step: int, actions: list, answer: str | None, **meta: Any
) -> Snapshot:
    """The wire form: Playwright's storage_state layout, the DOM details under ``halo_page``."""
    dom = dict(state.get("page") or {})
    origin = dom.pop("origin", None)
    local = dom.pop("local", {}) or {}
    session = dom.pop("session", {}) or {}
    origins = (
        [{"origin": origin, "localStorage": [{"name": k, "value": v} for k, v in local.items()]}] if origin else []
    )
    return Snapshot(
        task_id=task_id,
        url=state["url"],
        step=step,
        storage_state={
            "cookies": state.get("cookies", []),
            "origins": origins,
            "halo_page": {**dom, "pointer": state.get("pointer"), **meta},
        },
        session_storage={origin: session} if origin else {},
        actions=list(actions),
        answer=answer,
    )


def from_snapshot(snapshot: Snapshot) -> dict[str, Any]:
    """Inverse of ``to_snapshot`` (storage of the first origin that has any: the clones use one)."""
    ss = snapshot.storage_state
    dom = dict(ss.get("halo_page") or {})
    pointer = dom.pop("pointer", None) or [None, None]
    origins = [o for o in ss.get("origins", []) if isinstance(o, dict) and o.get("origin")]
    origin = origins[0]["origin"] if origins else next(iter(snapshot.session_storage), None)
    local = {}
    for o in origins:
        if o["origin"] == origin:
            local = {i["name"]: i["value"] for i in o.get("localStorage", []) if "name" in i and "value" in i}
    dom.update(origin=origin, local=local, session=snapshot.session_storage.get(origin or "", {}))
    return {"url": snapshot.url, "cookies": ss.get("cookies", []), "page": dom, "pointer": pointer}
