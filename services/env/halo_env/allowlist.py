"""Network allowlist: a session's browser may reach only its task's site origins.

Every HTTP(S) request and WebSocket of the context goes through ``NetworkGuard``; anything else
(the Redis port, vLLM's admin API, cloud metadata at 169.254.169.254, other local services) is
aborted and remembered, and the next observation reports it. Origins compare scheme, host and port
exactly, so allowing the clone server at 127.0.0.1:8300 does not allow 127.0.0.1:6379. Chromium
itself refuses file:// from web pages; those refusals surface as console errors and are reported
the same way.
"""

from __future__ import annotations

import contextlib
import logging
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, ConsoleMessage, Route, WebSocketRoute
from playwright.async_api import Error as PlaywrightError

logger = logging.getLogger("halo.env.allowlist")

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_WS_TO_HTTP = {"ws": "http", "wss": "https"}
# Schemes that never leave the browser.
_LOCAL_SCHEMES = {"data", "blob", "about"}
_MAX_REMEMBERED = 50


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` with the port always explicit; None for URLs without a network origin."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = _WS_TO_HTTP.get(parts.scheme.lower(), parts.scheme.lower())
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{scheme}://{parts.hostname.lower()}:{port or _DEFAULT_PORTS[scheme]}"


class NetworkGuard:
    """Installed once per browser context; each session that uses the context sets its origins."""

    def __init__(self) -> None:
        self.allowed: set[str] = set()
        self.blocked: list[str] = []
        self.blocked_navigation: str | None = None  # a top-level navigation refused since the last drain
        self.visited: set[str] = set()  # origins reached, so a reused context can be cleared

    def configure(self, allowed: set[str]) -> None:
        """Allow exactly these URLs' origins from now on (nothing before the first call)."""
        self.allowed = {o for o in (origin_of(u) for u in allowed) if o}
        self.blocked, self.blocked_navigation = [], None

    def allows(self, url: str) -> bool:
        scheme = url.split(":", 1)[0].lower()
        if scheme in _LOCAL_SCHEMES:
            return True
        origin = origin_of(url)
        return origin is not None and origin in self.allowed

    def _remember(self, url: str, navigation: bool) -> None:
        logger.info("blocked %s%s", "navigation to " if navigation else "request to ", url[:200])
        if len(self.blocked) < _MAX_REMEMBERED:
            self.blocked.append(url[:500])
        if navigation:
            self.blocked_navigation = url[:500]

    def drain(self) -> tuple[list[str], str | None]:
        """What was blocked since the last call, and the refused top-level navigation if any."""
        out, nav = self.blocked, self.blocked_navigation
        self.blocked, self.blocked_navigation = [], None
        return out, nav

    async def _on_route(self, route: Route) -> None:
        request = route.request
        url = request.url
        if self.allows(url):
            if (origin := origin_of(url)) is not None:
                self.visited.add(origin)
            with contextlib.suppress(PlaywrightError):
                await route.fallback()
            return
        navigation = request.is_navigation_request() and request.frame.parent_frame is None
        self._remember(url, navigation)
        with contextlib.suppress(PlaywrightError):
            if navigation:
                # 204 cancels a navigation and leaves the current document alone; an abort would
                # replace it with Chromium's error page and lose the page's in-DOM state.
                await route.fulfill(status=204, body="")
            else:
                await route.abort("blockedbyclient")

    async def _on_websocket(self, ws: WebSocketRoute) -> None:
        if self.allows(ws.url):
            ws.connect_to_server()
            return
        self._remember(ws.url, navigation=False)
        with contextlib.suppress(PlaywrightError):
            await ws.close(code=1008, reason="blocked by the HALO allowlist")

    def _on_console(self, message: ConsoleMessage) -> None:
        text = message.text
        if message.type == "error" and "Not allowed to load local resource" in text:
            self._remember(text.rsplit(" ", 1)[-1], navigation=True)

    async def install(self, context: BrowserContext) -> None:
        await context.route("**/*", self._on_route)
        await context.route_web_socket("**/*", self._on_websocket)
        context.on("console", self._on_console)
