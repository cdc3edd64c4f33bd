"""Session leases: an owner's sessions closed together when its lease expires or is released."""

from __future__ import annotations

from fastapi import APIRouter

from halo.schemas.env import CreateLeaseRequest, LeaseInfo, LeaseReleased
from halo_env.routes.state import Manager

router = APIRouter(prefix="/leases", tags=["leases"])


@router.post("", response_model=LeaseInfo)
async def create_lease(body: CreateLeaseRequest, m: Manager) -> LeaseInfo:
    return m.leases.create(body.owner).info()


@router.get("", response_model=list[LeaseInfo])
async def list_leases(m: Manager) -> list[LeaseInfo]:
    return m.leases.list()


@router.post("/{lease_id}/heartbeat", response_model=LeaseInfo)
async def heartbeat(lease_id: str, m: Manager) -> LeaseInfo:
    return m.renew_lease(lease_id)


@router.delete("/{lease_id}", response_model=LeaseReleased)
async def release_lease(lease_id: str, m: Manager) -> LeaseReleased:
    return await m.release_lease(lease_id)
