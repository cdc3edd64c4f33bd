"""The head's supervision loop: keep ``wanted`` rollout-node actors, never wait on one forever, and
publish what it sees to Redis for ``halo cluster status``.

Each tick looks at every actor without blocking (``ray.wait(timeout=0)`` on the calls it issued):
an actor that is not up within ``create_deadline_s`` is reported ``unplaceable`` with the reason,
and stays queued in Ray, so a node that joins later takes it: adding a node adds throughput without
a restart. An actor whose node or process dies is restarted by Ray (``max_restarts``); one whose
start failed (its constructor raised) is made again by the supervisor, at most
``actor_max_restarts`` times. Actors are detached: a supervisor that dies stops placement, not the
nodes' work, and the next supervisor finds them by name.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import ray
import redis
from ray.exceptions import GetTimeoutError, RayActorError, RayError

from halo import cluster_nodes
from halo.schemas.cluster import ClusterStatus, RolloutNodeStatus
from halo.settings.cluster import ClusterSettings
from halo_cluster.node_plan import NodePlan
from halo_cluster.rollout_node import ROLLOUT_RESOURCE, RolloutNode

logger = logging.getLogger("halo_cluster.supervisor")
NAMESPACE = "halo"


def actor_name(index: int) -> str:
    return f"halo-rollout-{index}"


def status_key(settings: ClusterSettings) -> str:
    return cluster_nodes.status_key(settings.key_prefix)


def wanted_key(settings: ClusterSettings) -> str:
    return f"{settings.key_prefix}wanted_nodes"


@dataclass
class _Tracked:
    name: str
    handle: ray.actor.ActorHandle
    created_at: float
    ready_ref: ray.ObjectRef | None = None
    status_ref: ray.ObjectRef | None = None
    status_sent_at: float = 0.0
    info: RolloutNodeStatus = field(default_factory=lambda: RolloutNodeStatus(name="", state="placing"))
    recreated: int = 0


class Supervisor:
    def __init__(
        self,
        settings: ClusterSettings,
        plan: NodePlan,
        redis_client: redis.Redis,
        *,
        log_root: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings, self.plan, self.redis, self.log_root, self.clock = settings, plan, redis_client, log_root, clock
        self.tracked: dict[str, _Tracked] = {}

    # -- the loop --------------------------------------------------------------------------------
    def wanted(self) -> int:
        raw = self.redis.get(wanted_key(self.settings))
        return int(raw) if raw is not None else self.settings.rollout_nodes

    def tick(self) -> ClusterStatus:
        wanted = self.wanted()
        for index in range(wanted):
            if actor_name(index) not in self.tracked:
                self._create(actor_name(index))
        for name in [n for n in self.tracked if int(n.rsplit("-", 1)[1]) >= wanted]:
            self._remove(name)
        for tracked in self.tracked.values():
            self._look(tracked)
        status = ClusterStatus(
            updated_at=self.clock(),
            ray_address=ray.get_runtime_context().gcs_address,
            wanted_nodes=wanted,
            nodes=[self.tracked[actor_name(i)].info for i in range(wanted)],
            ray_nodes_alive=sum(1 for n in ray.nodes() if n.get("Alive")),
        )
        self.redis.set(status_key(self.settings), status.model_dump_json())
        return status

    def run(self, stop: Callable[[], bool]) -> None:
        while not stop():
            try:
                self.tick()
            except Exception:
                # Supervision must outlive a GCS or Redis that is briefly away (a restart, a
                # partition): one bad tick is logged and the next one tries again.
                logger.exception("supervisor tick failed")
            time.sleep(self.settings.supervise_every_s)

    def shutdown(self) -> None:
        for name in list(self.tracked):
            self._remove(name)
        self.redis.delete(status_key(self.settings))

    # -- one actor -------------------------------------------------------------------------------
    def _create(self, name: str, recreated: int = 0) -> None:
        options = {
            "name": name,
            "namespace": NAMESPACE,
            "lifetime": "detached",
            "get_if_exists": True,
            "resources": {ROLLOUT_RESOURCE: 1},
            "num_cpus": 0,
            "max_restarts": self.settings.actor_max_restarts,
            "max_task_retries": 0,
        }
        handle = (
            ray.remote(RolloutNode)
            .options(**options)
            .remote(name, self.plan, self.settings.process_max_restarts, self.log_root)
        )
        tracked = _Tracked(name, handle, self.clock(), recreated=recreated)
        tracked.info = RolloutNodeStatus(name=name, state="placing", since=self.clock(), actor_restarts=recreated)
        tracked.ready_ref = handle.ready.remote()
        self.tracked[name] = tracked

    def _remove(self, name: str) -> None:
        tracked = self.tracked.pop(name)
        # Only a started actor has processes to stop gracefully; asking one that was never placed
        # would wait out the timeout for nothing.
        if tracked.ready_ref is None:
            with contextlib.suppress(RayError, GetTimeoutError):
                ray.get(tracked.handle.stop.remote(), timeout=15)
        ray.kill(tracked.handle, no_restart=True)

    def _set(self, tracked: _Tracked, state: str, reason: str = "", **fields) -> None:
        if tracked.info.state != state:
            fields["since"] = self.clock()
        tracked.info = tracked.info.model_copy(update={"state": state, "reason": reason, **fields})

    def _look(self, tracked: _Tracked) -> None:
        if tracked.ready_ref is not None:
            self._look_at_start(tracked)
        else:
            self._look_at_running(tracked)

    def _look_at_start(self, tracked: _Tracked) -> None:
        done, _ = ray.wait([tracked.ready_ref], timeout=0)
        if not done:
            waited = self.clock() - tracked.created_at
            if waited > self.settings.create_deadline_s:
                self._set(tracked, "unplaceable", f"not started after {waited:.0f} s: {self._why_pending()}")
            return
        try:
            ready = ray.get(tracked.ready_ref)
        except RayActorError as exc:
            self._start_failed(tracked, exc)
            return
        tracked.ready_ref = None
        self._set(tracked, "running", node_id=ready["node_id"], address=ready["address"], urls=ready["urls"])

    def _start_failed(self, tracked: _Tracked, exc: Exception) -> None:
        reason = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        if tracked.recreated >= self.settings.actor_max_restarts:
            tracked.ready_ref = None
            self._set(tracked, "stopped", f"gave up after {tracked.recreated} restarts: {reason}")
            return
        logger.warning("%s failed to start (%s); making it again", tracked.name, reason)
        ray.kill(tracked.handle, no_restart=True)
        self._create(tracked.name, recreated=tracked.recreated + 1)
        self._set(self.tracked[tracked.name], "restarting", reason)

    def _look_at_running(self, tracked: _Tracked) -> None:
        if tracked.status_ref is None:
            tracked.status_ref, tracked.status_sent_at = tracked.handle.status.remote(), self.clock()
            return
        done, _ = ray.wait([tracked.status_ref], timeout=0)
        if not done:
            silent = self.clock() - tracked.status_sent_at
            if silent > self.settings.create_deadline_s:
                self._set(tracked, "restarting", "not answering; its node may be gone")
                self._await_restart(tracked)
            elif silent > max(10.0, 3 * self.settings.supervise_every_s):
                # Seen in a 30 s partition: without this the node read "running" for as long as
                # Ray took to declare it dead, and status said nothing was wrong.
                self._set(tracked, "unreachable", f"no answer for {silent:.0f} s; its node may be cut off")
            return
        try:
            processes = ray.get(tracked.status_ref)
        except RayError as exc:
            self._set(tracked, "restarting", f"actor lost ({type(exc).__name__}); Ray restarts it")
            self._await_restart(tracked)
            return
        tracked.status_ref = None
        self._set(tracked, "running", processes=processes)

    def _await_restart(self, tracked: _Tracked) -> None:
        """Ray restarts the actor where a rollout node is free; watch for it like a new one."""
        tracked.status_ref = None
        tracked.created_at = self.clock()
        tracked.info = tracked.info.model_copy(update={"actor_restarts": tracked.info.actor_restarts + 1})
        tracked.ready_ref = tracked.handle.ready.remote()

    def _why_pending(self) -> str:
        total = int(ray.cluster_resources().get(ROLLOUT_RESOURCE, 0))
        free = int(ray.available_resources().get(ROLLOUT_RESOURCE, 0))
        if total == 0:
            return (
                f"no node offers the {ROLLOUT_RESOURCE!r} resource; join one with "
                f"`ray start --address <head>:<port> --resources '{{\"{ROLLOUT_RESOURCE}\": 1}}'`"
            )
        if free == 0:
            return f"all {total} rollout nodes are taken; join another node or lower the node count"
        return f"{free} rollout node(s) free but the actor has not started (see its log on the node)"
