"""What the cluster layer writes to Redis: the rollout nodes' status and the policy replicas' registry.

Ray places and supervises; these records are how everything else (``halo cluster status``, the
policy client on any node, the adapter publisher) learns what Ray placed, without importing Ray.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from halo.schemas.base import Message

# A node is "placing" until its actor answers; past the creation deadline it is "unplaceable" with
# Ray's reason (no node offers the resources, say) and stays queued: a node joining later takes it.
# A running node whose actor stops answering (its network is cut) is "unreachable" until it answers
# again or Ray declares it dead ("restarting").
NodeState = Literal["placing", "running", "unplaceable", "restarting", "stopped", "unreachable"]


class ProcessState(Message):
    name: str
    pid: int | None = None
    alive: bool = False
    restarts: int = 0
    last_exit: int | None = None  # exit status of the last death, None while it never died


class RolloutNodeStatus(Message):
    name: str
    state: NodeState
    reason: str = ""  # why it is not running, in words
    node_id: str | None = None  # Ray's node id once placed
    address: str | None = None  # the node's IP: where its env, reward and sites listen
    urls: dict[str, str] = Field(default_factory=dict)  # service name -> URL on that node
    processes: list[ProcessState] = Field(default_factory=list)
    actor_restarts: int = 0
    since: float = 0.0  # unix time of the last state change


class ClusterStatus(Message):
    updated_at: float
    ray_address: str
    wanted_nodes: int
    nodes: list[RolloutNodeStatus] = Field(default_factory=list)
    ray_nodes_alive: int = 0


class ReplicaRecord(Message):
    """One policy replica (a vLLM server), as it registers itself; the key expires unless refreshed."""

    replica_id: str
    url: str
    max_loras: int = Field(..., ge=1)
    adapters: list[str] = Field(default_factory=list)  # what it served at its last heartbeat
    registered_at: float = 0.0
    # Its machine does not see the head's data folder (the store is ``http``): its sidecar fetches an
    # adapter folder from the store and loads the local copy, so the fan-out asks the sidecar to load.
    fetches_adapters: bool = False


class AdapterLoadRequest(Message):
    """The fan-out asking a replica's sidecar to fetch an adapter folder from the store and load it."""

    request_id: str
    name: str
    key: str  # the folder relative to the head's data folder (``runs/<run>/adapters/v3``)
    deadline: float  # unix time after which the fan-out no longer waits: the sidecar skips it


class AdapterLoadReply(Message):
    request_id: str
    error: str = ""  # empty when the replica loaded it
    seconds: float = 0.0


class FanoutResult(Message):
    """One adapter version pushed to every live replica."""

    name: str
    current: bool  # every live replica lists it in /v1/models
    seconds: float  # wall time of the whole publish
    per_replica_s: dict[str, float] = Field(default_factory=dict)
    missing: dict[str, str] = Field(default_factory=dict)  # replica id -> why it does not list it
