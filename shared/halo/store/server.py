"""The head's data server: the parts of the data folder a node may need, over HTTP, for clusters
without a shared filesystem (``python -m halo.store serve``; ``halo cluster up`` starts it when the
cluster's store is ``http``).

Read-only but for two things: a node's env adds its screenshots, each under the sha256 of its bytes,
checked here, and a node's MCTS worker adds the search trees it wrote; an upload can create a file and
never change one. Every request carries the
cluster's token; the data folder's tokens and anything outside the served areas are never answered.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response

from halo.service import ServiceError, add_health_routes, install_error_handlers
from halo.store.base import SCREENSHOT, TREE, clean, readable

MAX_UPLOAD_BYTES = 32_000_000  # a screenshot; a full-page PNG of a tall page stays well under


def data_app(root: Path, token: str) -> FastAPI:
    if not token:
        raise ValueError("the data server needs a token (HALO_STORE_TOKEN, the cluster's token)")
    root = Path(root).resolve()
    app = FastAPI(title="HALO data server", docs_url=None, redoc_url=None, openapi_url=None)
    install_error_handlers(app, max_body_bytes=MAX_UPLOAD_BYTES)
    add_health_routes(app, "halo-store")
    expected = f"Bearer {token}".encode()

    def authorised(request: Request) -> None:
        given = request.headers.get("authorization", "").encode()
        if not secrets.compare_digest(given, expected):
            raise ServiceError(401, "missing or wrong token: send the cluster's token as a Bearer token")

    def served(rel: str) -> Path:
        try:
            rel = clean(rel)
        except ValueError as exc:
            raise ServiceError(400, str(exc)) from None
        if not readable(rel):
            raise ServiceError(400, f"{rel[:200]!r} is outside what the data server serves")
        path = (root / rel).resolve()
        if not path.is_relative_to(root):  # a link out of the data folder
            raise ServiceError(400, f"{rel[:200]!r} leads out of the data folder")
        return path

    @app.api_route("/v1/files/{rel:path}", methods=["GET", "HEAD"])
    async def read(rel: str, request: Request) -> Response:
        authorised(request)
        path = served(rel)
        if not path.is_file():
            raise ServiceError(404, f"no file {rel[:200]!r} on the head")
        return FileResponse(path)

    @app.get("/v1/dirs/{rel:path}")
    async def listing(rel: str, request: Request) -> JSONResponse:
        authorised(request)
        path = served(rel)
        if not path.is_dir():
            raise ServiceError(404, f"no folder {rel[:200]!r} on the head")
        files = [
            {"path": str(p.relative_to(path)), "size": p.stat().st_size}
            for p in sorted(path.rglob("*"))
            if p.is_file() and (p.resolve()).is_relative_to(root)
        ]
        return JSONResponse({"files": files})

    @app.put("/v1/files/{rel:path}")
    async def add(rel: str, request: Request) -> Response:
        authorised(request)
        match = SCREENSHOT.fullmatch(rel)
        tree = TREE.fullmatch(rel) is not None and ".." not in rel.split("/")
        if match is None and not tree:
            raise ServiceError(
                400,
                "only screenshots (screenshots/<xx>/<sha256>.png) and search trees (runs/<run>/trees/<id>.json) may be added",
            )
        body = await request.body()
        if match is not None:
            digest = hashlib.sha256(body).hexdigest()
            if digest != match.group(2) or not digest.startswith(match.group(1)):
                raise ServiceError(400, f"the bytes hash to {digest}, not to the name {match.group(2)}")
        target = served(rel)
        if target.exists():
            # A retried upload is fine; another tree under the same name (the job searched twice) is not
            # silently dropped: the worker reports it and the loop replaces the job.
            if tree and target.read_bytes() != body:
                raise ServiceError(409, f"the head already has another {rel[:200]!r}; a tree is never replaced")
            return Response(status_code=200)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(body)
        os.replace(tmp, target)
        return Response(status_code=201)

    return app
