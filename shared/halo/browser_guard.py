"""For the stack's internal APIs (env, reward): no state-changing request from a web page.

Only the stack's own programs call these services (the trainer, its workers, evaluations, the
benchmarks), and none of them is a browser. Any page the user opens in a browser can still send a
"simple" POST to 127.0.0.1 (a form, a text or typeless body: no CORS preflight). FastAPI refuses
such a body today (its ``strict_content_type`` default), a route without a body would not, and a
page's JSON would be refused only by the browser's preflight. Browsers send ``Origin`` with every
such request, so a state-changing request that carries one is refused (403) before any route runs,
whatever the framework's defaults. Reads stay open (a page cannot read the answers of another origin anyway).
The trainer's run API, whose own viewer page does send mutations, has its finer rule
(``halo_trainer.api.guard``); the clone sites are browsed by design and have none.
"""

from __future__ import annotations

from halo.schemas import ErrorResponse

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class NoBrowserWrites:
    """ASGI middleware: 403 for a POST/PUT/PATCH/DELETE that carries an ``Origin`` header."""

    def __init__(self, app, service: str) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
            return await self.app(scope, receive, send)
        origin = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"origin"), None)
        if origin is None:
            return await self.app(scope, receive, send)
        error = (
            f"{self.service}: {scope['method']} {scope['path'][:200]} refused: a web page "
            f"(Origin {origin[:200]!r}) cannot change this service; only the stack's own programs call it"
        )
        body = ErrorResponse(error=error, detail=None, kind="client").model_dump_json().encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": body})
