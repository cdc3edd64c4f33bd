"""What every HALO FastAPI service shares: error bodies, liveness/readiness, Prometheus metrics.

Routes stay thin; this module makes sure that anything a client sends wrong comes back as a 4xx
with an ``ErrorResponse`` naming the problem, never a stack trace or a 500.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from halo.schemas.env import ErrorResponse

ReadyCheck = Callable[[], Awaitable[None]]
logger = logging.getLogger("halo.service")

_KIND_BY_STATUS = {401: "auth", 403: "auth", 404: "not_found", 409: "conflict"}


class ServiceError(Exception):
    """Raise from a route to answer ``status`` with a clear message (4xx client, 5xx infra)."""

    def __init__(self, status: int, error: str, detail: object = None) -> None:
        super().__init__(error)
        self.status, self.error, self.detail = status, error, detail


def _body(status: int, error: str, detail: object = None) -> JSONResponse:
    kind = _KIND_BY_STATUS.get(status, "infra" if status >= 500 else "client")
    return JSONResponse(ErrorResponse(error=error, detail=detail, kind=kind).model_dump(), status_code=status)


def install_error_handlers(app: FastAPI) -> None:
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


def add_health_routes(
    app: FastAPI, service: str, checks: dict[str, ReadyCheck] | None = None, timeout_s: float = 5.0
) -> None:
    """``/health``: the process answers. ``/ready``: every dependency check passes (503 otherwise)."""
    started = time.time()

    @app.get("/health", tags=["ops"])
    async def health() -> dict:
        return {"status": "ok", "service": service, "uptime_s": round(time.time() - started, 1)}

    @app.get("/ready", tags=["ops"])
    async def ready() -> JSONResponse:
        results: dict[str, str] = {}
        for name, check in (checks or {}).items():
            try:
                await asyncio.wait_for(check(), timeout_s)
                results[name] = "ok"
            except Exception as exc:  # a failed dependency is the answer, not an error
                results[name] = f"failed: {type(exc).__name__}: {str(exc)[:200]}"
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
