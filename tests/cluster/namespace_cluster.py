"""The release tier's cluster: three nodes in network namespaces, each started as an operator would.

    n0 (head)   redis-server, vLLM's CPU build with the tiny model (halo_policy), the trainer's run
                API with no rollout workers of its own, and `halo cluster up` (Ray head, supervisor)
    n1, n2      `halo cluster join --address <n0>:<ray port>`; the supervisor places a rollout node
                on each: sites, env (Chromium), reward and two workers, on the node's own address

Every process binds its node's address; the test reaches them over the bridge. The data folder is
shared by every node (the shared-filesystem data plane: adapters, screenshots, run folders).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis

from halo.schemas.cluster import ClusterStatus
from tests.cluster.namespaces import Namespaces, Node

POLICY_PORT, TRAINER_PORT, REDIS_PORT, RAY_PORT = 8000, 8400, 6379, 6380
TRAINER_TOKEN = "namespace-test-token"


def _wait(what: str, check, timeout_s: float, every_s: float = 1.0, why=lambda: ""):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, redis.RedisError, OSError, ValueError):
            if result := check():
                return result
        time.sleep(every_s)
    raise AssertionError(f"{what} not after {timeout_s:.0f} s{': ' + why() if why() else ''}")


@dataclass
class NamespaceCluster:
    ns: Namespaces
    data_dir: Path
    workers_per_node: int = 2
    claim_idle_s: float = 10.0
    # Settings every process of this cluster gets (a scenario's own, e.g. sampling from replicas).
    extra_env: dict[str, str] = field(default_factory=dict)
    procs: list = field(default_factory=list)

    @property
    def head(self) -> Node:
        return self.ns.nodes[0]

    @property
    def redis_url(self) -> str:
        return f"redis://{self.head.address}:{REDIS_PORT}/0"

    @property
    def trainer_url(self) -> str:
        return f"http://{self.head.address}:{TRAINER_PORT}"

    @property
    def policy_url(self) -> str:
        return f"http://{self.head.address}:{POLICY_PORT}"

    @property
    def logs(self) -> Path:
        return self.data_dir / "test-logs"

    def env(self, **extra: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("HALO_", "RAY_"))}
        return {
            **base,
            "PYTHONUNBUFFERED": "1",
            "HALO_DATA_DIR": str(self.data_dir),
            "HALO_REDIS_URL": self.redis_url,
            "HALO_CLUSTER_HEAD_IP": self.head.address,
            "HALO_CLUSTER_RAY_PORT": str(RAY_PORT),
            "HALO_CLUSTER_ROLLOUT_NODES": str(len(self.ns.nodes) - 1),
            "HALO_CLUSTER_WORKERS_PER_NODE": str(self.workers_per_node),
            "HALO_CLUSTER_POLICY_URL": self.policy_url,
            # Services start slowly on a loaded 2-core machine: Chromium, the env's first page.
            "HALO_CLUSTER_CREATE_DEADLINE_S": "300",
            "HALO_TRAINER_JOB_CLAIM_IDLE_S": str(self.claim_idle_s),
            # Every node's raylet reads the whole machine's memory, which other jobs share: Ray's
            # out-of-memory killer restarted rollout nodes 13 times in one run for memory the
            # cluster did not use, so the tier measured the neighbours. The kernel's still guards.
            "RAY_memory_monitor_refresh_ms": "0",
            **self.extra_env,
            **extra,
        }

    def halo(self, node: Node, *args: str, timeout: float = 300):
        return self.ns.run(node, [sys.executable, "-m", "halo.cli.main", *args], env=self.env(), timeout=timeout)

    # -- the head ----------------------------------------------------------------------------------
    def start_head(self) -> None:
        redis_argv = [shutil.which("redis-server") or "redis-server", "--port", str(REDIS_PORT)]
        redis_argv += ["--bind", self.head.address, "--save", "", "--appendonly", "no", "--protected-mode", "no"]
        self.procs.append(self.ns.popen(self.head, redis_argv, env=self.env(), log=self.logs / "redis.log"))
        _wait("redis on the head", lambda: redis.Redis.from_url(self.redis_url).ping(), 30, 0.2)
        policy_env = self.env(HALO_POLICY_HOST=self.head.address, HALO_POLICY_PORT=str(POLICY_PORT))
        self.procs.append(
            self.ns.popen(
                self.head, [sys.executable, "-m", "halo_policy"], env=policy_env, log=self.logs / "policy.log"
            )
        )
        up = self.halo(self.head, "cluster", "up", timeout=600)
        assert up.returncode == 0, f"halo cluster up failed:\n{up.stdout}\n{up.stderr}"

    def start_trainer(self) -> None:
        """The run API, once the rollout nodes run: the trainer lists and probes tasks, and checks
        readiness, on any running node's env and reward (``HALO_TRAINER_CLUSTER_NODES``, the
        supervisor's status; it plays no episode itself), so a node killed or cut off, whose services
        come back on other ports, does not stop new runs."""
        trainer_env = self.env(
            HALO_TRAINER_HOST=self.head.address,
            HALO_TRAINER_PORT=str(TRAINER_PORT),
            HALO_TRAINER_API_TOKEN=TRAINER_TOKEN,
            HALO_TRAINER_POLICY_URL=self.policy_url,
            HALO_TRAINER_CLUSTER_NODES="halo:cluster:",  # the cluster's key prefix (its default)
            HALO_TRAINER_ROLLOUT_WORKERS="0",  # every episode is played on the rollout nodes
        )
        self.procs.append(
            self.ns.popen(
                self.head, [sys.executable, "-m", "halo_trainer"], env=trainer_env, log=self.logs / "trainer.log"
            )
        )

    def wait_head_ready(self, timeout_s: float = 900) -> None:
        _wait("vLLM on the head", lambda: httpx.get(f"{self.policy_url}/health", timeout=5).is_success, timeout_s, 2)
        _wait("the trainer's API", lambda: httpx.get(f"{self.trainer_url}/health", timeout=5).is_success, 120, 1)

    # -- rollout nodes -----------------------------------------------------------------------------
    def join(self, node: Node) -> None:
        joined = self.halo(
            node, "cluster", "join", "--address", f"{self.head.address}:{RAY_PORT}", "--node-ip", node.address
        )
        assert joined.returncode == 0, f"{node.name} did not join:\n{joined.stdout}\n{joined.stderr}"

    def status(self) -> ClusterStatus | None:
        raw = redis.Redis.from_url(self.redis_url, socket_connect_timeout=2).get("halo:cluster:status")
        return ClusterStatus.model_validate_json(raw) if raw else None

    def running_on(self) -> dict[str, str]:
        """Address -> rollout-node name, for every node running with all its processes alive."""
        status = self.status()
        if status is None:
            return {}
        return {
            n.address: n.name
            for n in status.nodes
            if n.state == "running" and n.processes and all(p.alive for p in n.processes)
        }

    def wait_nodes(self, nodes: list[Node], timeout_s: float = 600) -> ClusterStatus:
        want = {n.address for n in nodes}
        _wait(
            f"rollout nodes running on {sorted(want)}",
            lambda: want <= set(self.running_on()),
            timeout_s,
            2,
            why=lambda: s.model_dump_json() if (s := self.status()) else "no status",
        )
        return self.status()

    # -- runs --------------------------------------------------------------------------------------
    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.trainer_url, timeout=30, headers={"Authorization": f"Bearer {TRAINER_TOKEN}"})

    def run_status(self, run_id: str) -> dict:
        with self.api() as api:
            return api.get(f"/runs/{run_id}").json()

    def result_times(self, run_id: str) -> list[float]:
        """When each training result reached the run's stream (its entry id's milliseconds), sorted."""
        client = redis.Redis.from_url(self.redis_url)
        entries = client.xrange(f"halo:run:{run_id}:results")
        return sorted(
            int(entry_id.decode().split("-")[0]) / 1000
            for entry_id, fields in entries
            if json.loads(fields[b"data"]).get("purpose", "train") == "train"
        )

    def dump_logs(self) -> str:
        tails = {}
        for path in sorted(self.data_dir.rglob("*.log")):
            with contextlib.suppress(OSError):
                tails[str(path.relative_to(self.data_dir))] = path.read_text(errors="replace")[-1200:]
        return json.dumps(tails, indent=1)
