"""What a route reaches through ``request.app.state``: the lifespan creates the session manager, the
browser pool and the screenshot store there, so nothing browser-related exists at import time."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from halo.screenshots import ScreenshotStore
from halo_env.pool import BrowserPool
from halo_env.sessions import SessionManager


def _manager(request: Request) -> SessionManager:
    return request.app.state.manager


def _pool(request: Request) -> BrowserPool:
    return request.app.state.pool


def _store(request: Request) -> ScreenshotStore:
    return request.app.state.store


Manager = Annotated[SessionManager, Depends(_manager)]
Pool = Annotated[BrowserPool, Depends(_pool)]
Store = Annotated[ScreenshotStore, Depends(_store)]
