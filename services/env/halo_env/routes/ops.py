"""Screenshots by content hash and the pool's figures (``/health`` and ``/ready`` are ``halo.service``'s)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import Response

from halo.service import ServiceError
from halo_env.routes.state import Manager, Pool, Store

router = APIRouter()


@router.get("/screenshots/{sha256}", tags=["screenshots"], response_class=Response)
async def screenshot(sha256: str, store: Store) -> Response:
    try:
        png = await asyncio.to_thread(store.get, sha256)
    except ValueError:
        raise ServiceError(422, "not a sha256 hex digest (64 lowercase hex characters)") from None
    except FileNotFoundError:
        raise ServiceError(404, f"no screenshot {sha256}") from None
    return Response(png, media_type="image/png", headers={"Cache-Control": "public, max-age=31536000, immutable"})


@router.get("/stats", tags=["ops"])
async def stats(pool: Pool, m: Manager) -> dict:
    memory = await asyncio.to_thread(pool.memory_bytes)
    sessions = len(m.list())
    return {
        **pool.stats(),
        "sessions": sessions,
        "leases": len(m.leases),
        "leased_sessions": m.leases.leased_sessions,
        "browser_memory_bytes": memory,
        "memory_per_session_bytes": memory // sessions if sessions else None,
    }
