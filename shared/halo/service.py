"""What every HALO FastAPI service shares: error bodies, liveness/readiness, Prometheus metrics.

Routes stay thin; this module makes sure that anything a client sends wrong comes back as a 4xx
with an ``ErrorResponse`` naming the problem, never a stack trace or a 500.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from halo.schemas.env import ErrorResponse

ReadyCheck = Callable[[], Awaitable[None]]
logger = logging.getLogger("halo.service")

DEFAULT_MAX_BODY_BYTES = 1_000_000  # the run API's and the sites' bodies are small; env and reward pass theirs

_KIND_BY_STATUS = {401: "auth", 403: "auth", 404: "not_found", 409: "conflict"}


class ServiceError(Exception):
    """Raise from a route to answer ``status`` with a clear message (4xx client, 5xx infra)."""

    def __init__(self, status: int, error: str, detail: object = None) -> None:
        super().__init__(error)
        self.status, self.error, self.detail = status, error, detail


def _body(status: int, error: str, detail: object = None) -> JSONResponse:
    kind = _KIND_BY_STATUS.get(status, "infra" if status >= 500 else "client")
    return JSONResponse(ErrorResponse(error=error, detail=detail, kind=kind).model_dump(), status_code=status)


def install_error_handlers(app: FastAPI, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
    """Every error as an ``ErrorResponse``; request bodies go through ``BodyGuard`` first."""
    app.add_middleware(BodyGuard, max_bytes=max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors()[:20]:
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append({"field": loc, "problem": str(err.get("msg", ""))[:300]})
        first = problems[0] if problems else {"field": "body", "problem": "invalid"}
        return _body(422, f"invalid request: {first['field']}: {first['problem']}", problems)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _body(exc.status_code, str(exc.detail))

    @app.exception_handler(ServiceError)
    async def _service(_: Request, exc: ServiceError) -> JSONResponse:
        return _body(exc.status, exc.error, exc.detail)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return _body(500, f"internal error: {type(exc).__name__}")


# -- request bodies ---------------------------------------------------------------------------------
# Bodies are checked here, before any route parses them, so that every service that installs the
# error handlers gets the same two guarantees whatever its schemas: a size limit that holds for
# chunked bodies (Content-Length alone can be left out), and no lone UTF-16 surrogate in any string
# (JSON may spell one as "\\ud800"; Python's json accepts it, and the first UTF-8 encoding of it,
# in a hash, a Redis write or the JSON answer, raises, which was a 500 and a reset connection).

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_field(body: bytes) -> str | None:
    """The dotted path of the first string (key or value) holding a lone surrogate, else None.

    A body that cannot hold one (no surrogate escape, valid UTF-8) is passed at the cost of a byte
    scan. Otherwise it is parsed as the route would parse it: a valid pair (an emoji written as two
    escapes) decodes to one code point, so any surrogate left after parsing is a lone one.
    """
    if not _may_hold_surrogate(body):
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON: the route's own parser answers it
        return None
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _LONE_SURROGATE.search(value):
                return path or "body"
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                name = _printable(key)
                where = f"{path}.{name}" if path else name
                if _LONE_SURROGATE.search(key):
                    return where
                stack.append((where, item))
        elif isinstance(value, list):
            stack.extend((f"{path}.{i}" if path else str(i), v) for i, v in reversed(list(enumerate(value))))
    return None


def replace_lone_surrogates(value: Any) -> Any:
    """``value`` (JSON-like) with every lone surrogate in its strings and keys replaced by U+FFFD.

    For text a service reads from elsewhere rather than from its client (a web page's DOM, title
    or storage, which JavaScript lets hold lone surrogates): such text is kept, minus the code
    points that cannot be encoded, so that answering it never fails.
    """
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {replace_lone_surrogates(k): replace_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_lone_surrogates(v) for v in value]
    return value


def _may_hold_surrogate(body: bytes) -> bool:
    # Python's json decodes bytes with "surrogatepass" and guesses UTF-16/32 from NUL bytes, so a
    # surrogate can also arrive UTF-8-encoded (invalid UTF-8) or in a UTF-16/32 body.
    if b"\x00" in body or (b"\\u" in body and _SURROGATE_ESCAPE.search(body) is not None):
        return True
    if body.isascii():
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _printable(text: str) -> str:
    return text[:80].encode("utf-8", "backslashreplace").decode("utf-8")


class BodyGuard:
    """ASGI middleware: 413 once a body passes ``max_bytes`` (counted as it arrives, so chunked
    bodies are held to it too), 422 naming the field of a lone surrogate; otherwise the body is
    handed on unchanged.

    An oversize body is never kept: the 413 is sent as soon as the limit is passed and the server
    discards the rest of the request (uvicorn reads and drops it so the connection stays usable).
    """

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        if length is None and "chunked" not in headers.get("transfer-encoding", "").lower():
            await self.app(scope, receive, send)  # no body
            return
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(send, 413, f"request body of {length} bytes exceeds {self.max_bytes}")
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, 413, f"request body exceeds {self.max_bytes} bytes (chunked)")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        field = lone_surrogate_field(body)
        if field is not None:
            problem = "contains a lone UTF-16 surrogate (U+D800-U+DFFF), which is not a character"
            detail = [{"field": field, "problem": problem}]
            await self._refuse(send, 422, f"invalid request: {field}: {problem}", detail)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:  # later reads (disconnect detection in streaming answers) go to the server
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(send: Send, status: int, error: str, detail: object = None) -> None:
        response = _body(status, error, detail)
        await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
        await send({"type": "http.response.body", "body": response.body})


def add_health_routes(
    app: FastAPI, service: str, checks: dict[str, ReadyCheck] | None = None, timeout_s: float = 5.0
) -> None:
    """``/health`` (liveness): the process runs and its event loop answers; no dependency is checked,
    so a busy service or one whose dependency is down is still alive. ``/ready`` (readiness): every
    dependency check passes (503 otherwise, naming what failed)."""
    started = time.time()
    pid = os.getpid()

    @app.get("/health", tags=["ops"])
    async def health() -> dict:
        # The pid lets `halo stack up` tell its own instance from another program on the port.
        return {"status": "ok", "service": service, "pid": pid, "uptime_s": round(time.time() - started, 1)}

    async def run(check: ReadyCheck) -> str:
        try:
            await asyncio.wait_for(check(), timeout_s)
            return "ok"
        except Exception as exc:  # a failed dependency is the answer, not an error
            return f"failed: {type(exc).__name__}: {str(exc)[:200]}"

    @app.get("/ready", tags=["ops"])
    async def ready() -> JSONResponse:
        # Concurrently: one answer takes the slowest check's time, not the sum of all of them.
        names = list(checks or {})
        results = dict(zip(names, await asyncio.gather(*(run(checks[n]) for n in names)), strict=True))
        ok = all(v == "ok" for v in results.values())
        return JSONResponse({"ready": ok, "service": service, "checks": results}, status_code=200 if ok else 503)

    @app.get("/metrics", tags=["ops"])
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def redis_check(redis_url: str) -> ReadyCheck:
    async def check() -> None:
        import redis.asyncio as aioredis

        client = aioredis.from_url(redis_url)
        try:
            await client.ping()
        finally:
            await client.aclose()

    return check
