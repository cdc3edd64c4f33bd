"""Capture a session's browser state and rebuild it in a fresh context (fork, restore, recovery).

State = cookies + localStorage and sessionStorage of the page's origin + URL, plus what the DOM
holds that storage does not (scroll positions, edited form fields, focus and text selection) and
where the mouse is. Rebuilding it: cookies into the context, storage seeded on a blank document
served at the site's own origin (so the app's scripts never run before their storage is in place),
then the real URL is loaded and the DOM details re-applied. Or, faster, ``rewind``: the same state
written into a page that shows the clone's app already, which re-renders itself (no load).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from playwright.async_api import Page, Route
from pydantic import BaseModel, ConfigDict, Field, model_validator

from halo.schemas import Snapshot
from halo_env.page_js import (
    CAPTURE,
    QUIET_POINTER_OFF,
    QUIET_POINTER_ON,
    RESTORE_PAGE,
    RESTORE_SELECTION,
    REWIND,
    SEED_STORAGE,
)
from halo_env.pool import Lease

_BLANK = "<!doctype html><html><head><title></title></head><body></body></html>"


async def capture(
    lease: Lease, evaluate_timeout_s: float, pointer: tuple[float | None, float | None]
) -> dict[str, Any]:
    """The page's state right now (see module docstring)."""
    page = await asyncio.wait_for(lease.page.evaluate(CAPTURE), evaluate_timeout_s)
    cookies = await asyncio.wait_for(lease.context.cookies(), evaluate_timeout_s)
    return {"url": lease.page.url, "cookies": cookies, "page": page, "pointer": list(pointer)}


def rewind_url(state: dict[str, Any]) -> str | None:
    """The clone app document a page must show for ``rewind`` to rebuild ``state`` in it, if any."""
    app = (state.get("page") or {}).get("app")
    return app if isinstance(app, str) and state["url"].split("#")[0] == app else None


def rewind_key(state: dict[str, Any]) -> str | None:
    """What a parked page must match to be rewound into ``state``: its clone app document and the
    data set the document built when it loaded. A clone reads ``config.dataset`` (REAL's data or its
    own) once, at load, so a page loaded for a REAL task rewound into a local task of the same site
    would keep REAL's catalog."""
    app = rewind_url(state)
    if app is None:
        return None
    for key, value in ((state.get("page") or {}).get("local") or {}).items():
        if key.endswith(":meta"):
            try:
                dataset = (json.loads(value).get("config") or {}).get("dataset")
            except (TypeError, ValueError, AttributeError):
                dataset = None
            if isinstance(dataset, str) and dataset:
                return f"{app} dataset={dataset}"
    return app


async def rewind(lease: Lease, state: dict[str, Any]) -> None:
    """Rebuild ``state`` in a page that already shows its clone app (``rewind_url``): no navigation.

    Cookies and storage are replaced, the app re-renders from them (``REWIND``), then the DOM
    details and the cursor are put back as ``restore`` does. The cursor of the page's previous
    session is moved off the page first, so no hover state survives from it.
    """
    page, context = lease.page, lease.context
    await context.clear_cookies()
    if state.get("cookies"):
        await context.add_cookies(state["cookies"])
    dom = state.get("page") or {}
    await page.evaluate(REWIND, {"url": state["url"], "local": dom.get("local", {}), "session": dom.get("session", {})})
    await _restore_dom(page, dom, state.get("pointer"), off_page=True)


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
    await _restore_dom(page, dom, state.get("pointer"), off_page=False)


async def _restore_dom(page: Page, dom: dict[str, Any], pointer: list | None, off_page: bool) -> None:
    press = await page.evaluate(RESTORE_PAGE, dom)  # where to press to focus as the live page did, if a press
    x, y = (pointer or [None, None])[:2]
    if x is None or y is None:
        x, y = (-1, -1) if off_page or press else (None, None)  # -1: a fresh page's cursor, over nothing
    if x is not None and y is not None:
        # Hover styles need the cursor in place, a mouse focus a press; the page must see neither
        # (see QUIET_POINTER_ON).
        await page.evaluate(QUIET_POINTER_ON)
        try:
            if press:
                await page.mouse.move(*press)
                await page.mouse.down()
                await page.mouse.up()
            await page.mouse.move(x, y)
        finally:
            await page.evaluate(QUIET_POINTER_OFF)
    if dom.get("selection"):
        await page.evaluate(RESTORE_SELECTION, dom)


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Cookie(_Loose):
    model_config = ConfigDict(extra="allow")
    name: str = Field(max_length=4096)
    value: str = Field(max_length=16384)
    domain: str | None = Field(None, max_length=253)
    path: str | None = Field(None, max_length=4096)
    url: str | None = Field(None, max_length=4096)
    expires: float | None = None
    httpOnly: bool | None = None
    secure: bool | None = None
    sameSite: str | None = Field(None, pattern="^(Strict|Lax|None)$")

    @model_validator(mode="after")
    def _where(self) -> _Cookie:
        if not self.url and not (self.domain and self.path):
            raise ValueError("a cookie needs 'url' or both 'domain' and 'path'")
        return self


class _Item(_Loose):
    name: str
    value: str


class _Origin(_Loose):
    origin: str = Field(max_length=300)
    localStorage: list[_Item] = Field(default_factory=list)


class _Scrolled(_Loose):
    path: str = Field(max_length=4000)
    top: float = 0
    left: float = 0


class _Field(_Loose):
    path: str = Field(max_length=4000)
    value: str | None = Field(None, max_length=100_000)
    checked: bool | None = None


class _Point(_Loose):
    path: str = Field(max_length=4000)
    child: int = -1
    offset: int = Field(0, ge=0)


class _Selection(_Loose):
    start: _Point | None = None
    end: _Point | None = None


class _Focus(_Loose):
    path: str = Field(max_length=4000)
    start: int | None = None
    end: int | None = None
    visible: bool | None = None  # the focus ring drawn (keyboard focus) or not (a mouse press); None: unknown


class _Scroll(_Loose):
    x: float = 0
    y: float = 0


class _PageState(_Loose):
    scroll: _Scroll = Field(default_factory=_Scroll)
    scrolled: list[_Scrolled] = Field(default_factory=list, max_length=10_000)
    fields: list[_Field] = Field(default_factory=list, max_length=10_000)
    focus: _Focus | None = None
    selection: _Selection | None = None
    pointer: tuple[float | None, float | None] = (None, None)


class _StorageState(_Loose):
    cookies: list[_Cookie] = Field(default_factory=list, max_length=1000)
    origins: list[_Origin] = Field(default_factory=list, max_length=100)
    halo_page: _PageState = Field(default_factory=_PageState)


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
    """Inverse of ``to_snapshot`` (storage of the first origin: the clones use one).

    A client may send any snapshot, so its browser state is checked field by field first:
    ``pydantic.ValidationError`` (a 422 for the caller) rather than a script failing in the page.
    """
    ss = _StorageState.model_validate(snapshot.storage_state)
    dom = ss.halo_page.model_dump(exclude={"pointer"})
    origin = ss.origins[0].origin if ss.origins else next(iter(snapshot.session_storage), None)
    local = {i.name: i.value for o in ss.origins if o.origin == origin for i in o.localStorage}
    dom.update(origin=origin, local=local, session=snapshot.session_storage.get(origin or "", {}))
    cookies = [c.model_dump(exclude_none=True) for c in ss.cookies]
    return {"url": snapshot.url, "cookies": cookies, "page": dom, "pointer": list(ss.halo_page.pointer)}
