"""A small stdlib HTTP server on a free loopback port, served from a thread while a ``with`` lasts.

The stand-in for "some other program on a port" in tests and benches: a static site, a dependency
that answers 200, a foreign service that answers 404.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def send_json(self, status: int, body: bytes) -> None:
        """One answer: ``status`` with ``body`` (JSON text) as ``application/json``."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class OkHandler(QuietHandler):
    """Answers every GET with 200 and ``body``."""

    body = b"{}"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


class ServedInThread:
    def __init__(self, handler: type[BaseHTTPRequestHandler] | Any) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
