"""Cluster settings (prefix ``HALO_CLUSTER_``): how many rollout nodes Ray places, what each runs,
how long placement may take, and how policy replicas register (docs/cluster.md)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from halo.settings import HaloSettings


class ClusterSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_CLUSTER_", env_file=".env", extra="ignore", frozen=True)

    ray_port: int = Field(
        6380, ge=1, le=65535, description="Port of the Ray head's GCS (`ray start --address host:port`)"
    )
    head_ip: str = Field("127.0.0.1", description="Address the Ray head binds and nodes join at")
    rollout_nodes: int = Field(
        1, ge=0, description="Rollout nodes to place (count); `halo cluster scale` changes it while the head runs"
    )
    workers_per_node: int = Field(2, ge=1, description="Rollout worker processes on each rollout node (K, count)")
    policy_url: str = Field(
        "http://127.0.0.1:8000", description="vLLM server the rollout nodes' workers sample from (until replicas)"
    )
    policy_api_key: SecretStr = Field(
        SecretStr(""),
        description="The replicas' HALO_POLICY_API_KEY: a replica's sidecar sends it to its own vLLM (the nodes' "
        "workers read HALO_TRAINER_POLICY_API_KEY from the node's environment)",
    )
    policy_replicas: bool = Field(
        False,
        description="The rollout nodes' workers sample from the policy replicas registered under key_prefix "
        "(HALO_TRAINER_POLICY_REPLICAS on each worker; set it on the trainer too) instead of policy_url",
    )
    create_deadline_s: float = Field(
        60.0, gt=0, description="How long an actor may take to be placed and start before it is reported, seconds"
    )
    actor_max_restarts: int = Field(
        20, ge=0, description="Restarts Ray gives a rollout-node actor whose process or node died (count)"
    )
    process_max_restarts: int = Field(
        10, ge=0, description="Restarts a rollout node gives one of its processes before it reports it dead (count)"
    )
    supervise_every_s: float = Field(2.0, gt=0, description="Period of the supervisor's look at the actors, seconds")
    key_prefix: str = Field("halo:cluster:", description="Prefix of every Redis key the cluster layer writes")
    replica_ttl_s: float = Field(
        10.0, gt=0, description="A policy replica that has not sent a heartbeat for this long is dead, seconds"
    )
    replica_heartbeat_s: float = Field(3.0, gt=0, description="Heartbeat period of a policy replica, seconds")
