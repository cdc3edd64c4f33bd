"""Session leases: sessions that die with their owner.

A rollout worker holds one lease (``POST /leases``) and renews it with a heartbeat every few
seconds; every session it creates names the lease, and forks inherit their parent's. When the
heartbeat stops for ``lease_ttl_s`` (the worker was killed, its host lost, its process frozen) the
env closes every session of the lease at its next sweep, so a dead worker's browser contexts come
back within seconds instead of after the idle TTL. A leased session is never reaped for being idle:
its owner is alive, e.g. waiting out a long policy-server outage.

This module only keeps the book; ``SessionManager`` closes the sessions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from halo.schemas import new_id
from halo.schemas.env import LeaseInfo
from halo.service import ServiceError


@dataclass(eq=False)
class SessionLease:
    id: str
    owner: str
    ttl_s: float
    created_at: float = field(default_factory=time.time)
    renewed_at: float = field(default_factory=time.time)
    renewed_mono: float = field(default_factory=time.monotonic)  # expiry is judged on the monotonic clock
    sessions: set[str] = field(default_factory=set)

    def expired(self, now_mono: float) -> bool:
        return now_mono - self.renewed_mono > self.ttl_s

    def info(self) -> LeaseInfo:
        return LeaseInfo(
            lease_id=self.id,
            owner=self.owner,
            ttl_s=self.ttl_s,
            sessions=len(self.sessions),
            created_at=self.created_at,
            renewed_at=self.renewed_at,
        )


class LeaseBook:
    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._leases: dict[str, SessionLease] = {}

    def __len__(self) -> int:
        return len(self._leases)

    def create(self, owner: str) -> SessionLease:
        lease = SessionLease(id=new_id("lease"), owner=owner, ttl_s=self.ttl_s)
        self._leases[lease.id] = lease
        return lease

    def live(self, lease_id: str) -> SessionLease:
        """The lease, if it exists and has not expired (an expired one awaiting its sweep counts as gone)."""
        lease = self._leases.get(lease_id)
        if lease is None or lease.expired(time.monotonic()):
            raise ServiceError(
                404, f"unknown lease {lease_id[:80]!r} (expired, released or never created): create a new one"
            )
        return lease

    def renew(self, lease_id: str) -> SessionLease:
        lease = self.live(lease_id)
        lease.renewed_mono, lease.renewed_at = time.monotonic(), time.time()
        return lease

    def attach(self, lease_id: str, session_id: str) -> None:
        self.live(lease_id).sessions.add(session_id)

    def detach(self, lease_id: str, session_id: str) -> None:
        lease = self._leases.get(lease_id)
        if lease is not None:
            lease.sessions.discard(session_id)

    def pop(self, lease_id: str) -> SessionLease | None:
        return self._leases.pop(lease_id, None)

    def pop_expired(self) -> list[SessionLease]:
        now = time.monotonic()
        gone = [lease for lease in self._leases.values() if lease.expired(now)]
        for lease in gone:
            del self._leases[lease.id]
        return gone

    def list(self) -> list[LeaseInfo]:
        return [lease.info() for lease in self._leases.values()]

    @property
    def leased_sessions(self) -> int:
        return sum(len(lease.sessions) for lease in self._leases.values())
