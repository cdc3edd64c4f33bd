"""An ASGI app served on a free local port in a thread, for tests that drive it from Chromium."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn

from tests.conftest import free_port


@contextlib.contextmanager
def serve(app, lifespan: str = "auto") -> Iterator[str]:
    """Yield the app's base URL while uvicorn serves it; stop it after. ``lifespan="off"`` skips the
    app's own start-up (a test that set ``app.state`` itself)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the app did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
