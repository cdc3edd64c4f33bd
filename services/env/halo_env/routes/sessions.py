"""Sessions: reset into a task, restore a snapshot, step, fork, snapshot, validate, close."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from halo.schemas import (
    CreateSessionRequest,
    ForkRequest,
    ForkResponse,
    ResetResponse,
    SessionInfo,
    Snapshot,
    StepRequest,
    StepResponse,
    ValidationResult,
)
from halo_env.routes.state import Manager

# The restored session belongs to this lease (as a reset's ``lease_id`` does): closed when it expires.
LEASE_QUERY = "The owner's session lease (POST /leases); unset: the session lives until closed or idle"

router = APIRouter(prefix="/sessions", tags=["sessions"])


@router.post("", response_model=ResetResponse)
async def create_session(body: CreateSessionRequest, m: Manager) -> ResetResponse:
    return await m.create(body)


@router.get("", response_model=list[SessionInfo])
async def list_sessions(m: Manager) -> list[SessionInfo]:
    return m.list()


@router.post("/restore", response_model=ResetResponse)
async def restore_session(
    body: Snapshot,
    m: Manager,
    lease_id: Annotated[
        str | None, Query(min_length=8, max_length=80, pattern=r"^[A-Za-z0-9_\-]+$", description=LEASE_QUERY)
    ] = None,
) -> ResetResponse:
    return await m.restore(body, lease_id)


@router.post("/{session_id}/step", response_model=StepResponse)
async def step(session_id: str, body: StepRequest, m: Manager) -> StepResponse:
    return await m.step(session_id, body.action)


@router.post("/{session_id}/fork", response_model=ForkResponse)
async def fork(session_id: str, body: ForkRequest, m: Manager) -> ForkResponse:
    return await m.fork(session_id, body.n, body.method)


@router.get("/{session_id}/snapshot", response_model=Snapshot)
async def snapshot(session_id: str, m: Manager) -> Snapshot:
    return await m.snapshot(session_id)


@router.post("/{session_id}/validate", response_model=ValidationResult)
async def validate(session_id: str, m: Manager) -> ValidationResult:
    return await m.validate(session_id)


@router.delete("/{session_id}")
async def close_session(session_id: str, m: Manager) -> dict:
    await m.close(session_id)
    return {"closed": session_id}
