"""The rollout-node actor: one per node that offers the ``rollout_node`` resource; it runs the
node's processes (``NodeProcesses``) and answers the supervisor's questions. No episode data goes
through it: its workers take jobs from Redis and talk HTTP to the services, like any worker."""

from __future__ import annotations

import tempfile
from pathlib import Path

import ray

from halo.schemas.cluster import ProcessState
from halo_cluster.node_plan import NodePlan
from halo_cluster.node_processes import NodeProcesses
from halo_cluster.node_store import check_node_store

ROLLOUT_RESOURCE = "rollout_node"


class RolloutNode:
    """Created with ``resources={"rollout_node": 1}`` so that one lands on each rollout node.

    A plain (synchronous) actor on purpose: its methods run on the thread that started the
    processes, and the processes die with that thread (``PR_SET_PDEATHSIG``)."""

    def __init__(self, name: str, plan: NodePlan, max_restarts: int, log_root: str = "") -> None:
        self.name = name
        self.address = ray.util.get_node_ip_address()
        check_node_store(plan)  # before any process: a node blind to the head's data does not start
        root = Path(log_root) if log_root else Path(tempfile.gettempdir()) / "halo-cluster"
        self.processes = NodeProcesses(plan, self.address, root / name, max_restarts)
        try:
            self.processes.start()
        except BaseException:
            self.processes.stop(timeout_s=2.0)
            raise

    def ready(self) -> dict:
        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "address": self.address,
            "urls": self.processes.urls,
        }

    def status(self) -> list[ProcessState]:
        return self.processes.poll()

    def stop(self) -> None:
        self.processes.stop()
