"""Logging for services: one line per record, key facts first. No print() in services."""

from __future__ import annotations

import logging
import sys


def setup_logging(service: str, level: str = "INFO") -> logging.Logger:
    root = logging.getLogger()
    if not any(getattr(h, "_halo", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s {service} %(name)s: %(message)s"))
        handler._halo = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level.upper())
    # One line per HTTP call between services drowns what matters; their errors still surface.
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    return logging.getLogger(f"halo.{service}")
