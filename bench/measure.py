"""What the benches share: a free local port and one summary of a list of timings."""

from __future__ import annotations

import socket
import statistics


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ms_stats(ms: list[float]) -> dict:
    """n, median, 90th percentile, min and max of timings in milliseconds."""
    ms = sorted(ms)
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "p90_ms": round(ms[min(len(ms) - 1, int(0.9 * len(ms)))], 2),
        "min_ms": round(ms[0], 2),
        "max_ms": round(ms[-1], 2),
    }
