"""Small helpers shared by the env tests."""

from __future__ import annotations

from typing import Any

import httpx

from halo.actions import from_pixels
from halo.schemas import Viewport

VIEWPORT = Viewport()


def rel(x: float, y: float) -> list[int]:
    """The 0..1000 coordinate that lands on viewport pixel (x, y)."""
    return list(from_pixels((x, y), VIEWPORT))


def create(http: httpx.Client, task_id: str = "fixture.actions", **extra: Any) -> dict:
    r = http.post("/sessions", json={"task_id": task_id, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def step(http: httpx.Client, sid: str, **action: Any) -> dict:
    r = http.post(f"/sessions/{sid}/step", json={"action": action})
    assert r.status_code == 200, r.text
    return r.json()


def events(obs: dict) -> list[dict]:
    return obs["site_state"]["state"]["events"]
