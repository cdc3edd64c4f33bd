"""The clone server on a free local port inside the calling event loop (docs screenshots, benches)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn

from halo_sites.app import create_app


@asynccontextmanager
async def serving_clones() -> AsyncIterator[str]:
    """Serve the clones (one uvicorn worker) while the block runs; yields their base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            serving.result()  # raises what stopped the server
            raise RuntimeError("the clone server exited before it started")
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving
