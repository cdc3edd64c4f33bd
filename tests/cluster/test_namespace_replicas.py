"""The release tier's policy replicas: the run samples from two real vLLM CPU servers, one on n0 and
one on n1, each kept registered by the real sidecar (`halo cluster replica`), with the trainer and
the rollout nodes' workers on the replicas (``HALO_TRAINER_POLICY_REPLICAS``,
``HALO_CLUSTER_POLICY_REPLICAS``). Mid-run n1's vLLM is SIGKILLed (the wrapper and every process
group under it) and started again, as a service manager would.

What must hold: the run finishes with every job acknowledged once; while a replica is registered it
serves every live adapter version (the restarted one loads them before it registers again); no
transition is dropped as stale and no policy error reaches a worker (the failover absorbs the dead
replica). Figures go to ``bench/results/cluster_namespaces.json`` under ``replica_restarted``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import redis

from tests.cluster.namespaces import Namespaces, Node, namespace_marks

pytestmark = namespace_marks()

from tests.cluster import test_namespaces as base  # noqa: E402
from tests.cluster.namespace_cluster import POLICY_PORT, NamespaceCluster, _wait  # noqa: E402

PREFIX = "halo:cluster:"
MAX_LORAS = 4  # halo_policy's default --max-loras; the run's window (max_staleness 2) needs 4
EPISODES = int(os.environ.get("HALO_NS_REPLICA_EPISODES", "64"))


def replica_url(node: Node) -> str:
    return f"http://{node.address}:{POLICY_PORT}"


def _as_is(argv: list[str]) -> list[str]:
    return argv


def start_policy(c: NamespaceCluster, node: Node, log: str, wrap: Callable[[list[str]], list[str]] = _as_is):
    """vLLM (``halo_policy``) on ``node``; ``wrap`` changes how its command runs (a folder of its own)."""
    env = c.env(HALO_POLICY_HOST=node.address, HALO_POLICY_PORT=str(POLICY_PORT))
    return c.ns.popen(node, wrap([sys.executable, "-m", "halo_policy"]), env=env, log=c.logs / log)


def start_sidecar(
    c: NamespaceCluster,
    node: Node,
    replica_id: str,
    env: dict[str, str] | None = None,
    wrap: Callable[[list[str]], list[str]] = _as_is,
):
    """The replica's sidecar (``halo cluster replica``) on ``node``, for its vLLM; the cluster's
    environment unless ``env`` is given."""
    argv = [sys.executable, "-m", "halo.cli.main", "cluster", "replica", "--id", replica_id]
    argv += ["--url", replica_url(node), "--max-loras", str(MAX_LORAS)]
    return c.ns.popen(node, wrap(argv), env=c.env() if env is None else env, log=c.logs / f"sidecar-{replica_id}.log")


def await_registered(c: NamespaceCluster, *ids: str) -> None:
    client = redis.Redis.from_url(c.redis_url)
    keys = [f"{PREFIX}replica:{i}" for i in ids]
    _wait(f"replicas {', '.join(ids)} registered", lambda: client.exists(*keys) == len(keys), 120)


def stop_sidecars(sidecars: list) -> None:
    for proc in sidecars:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    for proc in sidecars:
        with contextlib.suppress(Exception):
            proc.wait(timeout=20)


def kill_tree(pid: int) -> int:
    """SIGKILL the process groups of ``pid`` and of everything under it: halo_policy starts vLLM in
    a session of its own, so killing the wrapper's group alone would leave vLLM serving."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    groups = set()
    for member in tree:
        with contextlib.suppress(ProcessLookupError):
            groups.add(os.getpgid(member))
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    return len(tree)


class ReplicaWatch(threading.Thread):
    """Once a second: which replicas are registered, which adapter versions are live, and what each
    registered replica's ``/v1/models`` lists. A registered replica that answers and lacks a version
    live before and after its answer is a violation (a job could be routed to it for that version)."""

    def __init__(self, redis_url: str) -> None:
        super().__init__(daemon=True)
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=5)
        self.stopping = threading.Event()
        self.checks = 0
        self.violations: list[dict] = []
        self.not_answering: dict[str, int] = {}  # registered but silent: the beat before it drops out
        self.published: set[str] = set()
        self.seen_on: dict[str, set[str]] = {}
        self.registered: list[tuple[float, set[str]]] = []

    def versions(self) -> set[str]:
        return {v.decode() for v in self.redis.hkeys(f"{PREFIX}versions")}

    def tick(self) -> None:
        ids = sorted(i.decode() for i in self.redis.smembers(f"{PREFIX}replicas"))
        records = {i: raw for i in ids if (raw := self.redis.get(f"{PREFIX}replica:{i}"))}
        self.registered.append((time.time(), set(records)))
        before = self.versions()
        self.published |= before
        for rid, raw in records.items():
            try:
                served = {m["id"] for m in httpx.get(json.loads(raw)["url"] + "/v1/models", timeout=5).json()["data"]}
            except (httpx.HTTPError, ValueError, KeyError):
                self.not_answering[rid] = self.not_answering.get(rid, 0) + 1
                continue
            live = before & self.versions()
            self.checks += 1
            for name in served & live:
                self.seen_on.setdefault(name, set()).add(rid)
            if lacking := live - served:
                self.violations.append({"at": time.time(), "replica": rid, "lacking": sorted(lacking)})

    def run(self) -> None:
        while not self.stopping.is_set():
            with contextlib.suppress(redis.RedisError):
                self.tick()
            self.stopping.wait(1.0)

    def registered_since(self, replica_id: str, t: float) -> float | None:
        return next((at for at, ids in self.registered if at >= t and replica_id in ids), None)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pytest.importorskip("ray")
    with Namespaces(3) as ns:
        n0, n1, _ = ns.nodes
        c = NamespaceCluster(
            ns,
            tmp_path_factory.mktemp("nsreplicas"),
            extra_env={"HALO_CLUSTER_POLICY_REPLICAS": "true", "HALO_TRAINER_POLICY_REPLICAS": PREFIX},
        )
        sidecars = []
        try:
            c.start_head()
            # The second vLLM starts while the nodes join: both take minutes on 2 cores.
            c.replica_proc = start_policy(c, n1, "policy-n1.log")
            for node in ns.nodes[1:]:
                c.join(node)
            c.wait_nodes(ns.nodes[1:])
            c.start_trainer()
            c.wait_head_ready()
            _wait("vLLM on n1", lambda: httpx.get(f"{replica_url(n1)}/health", timeout=5).is_success, 900, 2)
            sidecars = [start_sidecar(c, n0, "n0"), start_sidecar(c, n1, "n1")]
            await_registered(c, "n0", "n1")
            yield c
        except BaseException:
            print(c.dump_logs())
            raise
        finally:
            stop_sidecars(sidecars)
            down = c.halo(n0, "cluster", "down", timeout=120)
            print(down.stdout, down.stderr)


def vllm_metric(url: str, name: str) -> float:
    """One of the vLLM server's Prometheus series, summed over its labels (counters: since it started)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(f"vllm:{name}"))


def run_records(c: NamespaceCluster, run_id: str) -> dict:
    """What the run itself recorded: its results (the version each transition was sampled from,
    infrastructure failures that reached a worker), its metrics lines and the replicas' counters."""
    client = redis.Redis.from_url(c.redis_url)
    results = [json.loads(f[b"data"]) for _, f in client.xrange(f"halo:run:{run_id}:results")]
    train = [r for r in results if r.get("purpose", "train") == "train"]
    transitions = [t for r in train for t in r["transitions"]]
    lines = [json.loads(line) for line in (c.data_dir / "runs" / run_id / "metrics.jsonl").read_text().splitlines()]
    counters = {k.decode(): int(v) for k, v in client.hgetall(f"{PREFIX}infra:run:{run_id}").items()}
    job_errors = list(base.infra_failed(c, run_id).values())
    return {
        "transitions": len(transitions),
        "versions_sampled": sorted({t["policy_version"] for t in transitions}),
        "dropped_stale": int(sum(m.get("rollout/dropped_stale", 0) for m in lines)),
        "transitions_with_infra_error": sum(bool(t.get("infra_error")) for t in transitions),
        "jobs_failed_on_infra": len(job_errors),
        "adapter_not_found_reaching_workers": sum(bool(re.search(r"404|not found", e, re.I)) for e in job_errors),
        "infra_errors": job_errors[:5],
        "replica_counters": counters,
        "updates": len(lines),
    }


def test_a_replica_killed_and_restarted_mid_run(cluster: NamespaceCluster) -> None:
    c = cluster
    n0, n1, n2 = c.ns.nodes
    c.wait_nodes([n1, n2])
    watch = ReplicaWatch(c.redis_url)
    watch.start()
    try:
        run_id = base.submit(c, EPISODES, "ns-replicas")
        base.wait_episodes(c, run_id, int(0.3 * EPISODES))
        t_kill = time.time()
        killed = kill_tree(c.replica_proc.pid)
        c.replica_proc.wait(timeout=30)
        client = redis.Redis.from_url(c.redis_url)
        _wait("n1 out of the registry", lambda: not client.exists(f"{PREFIX}replica:n1"), 60, 0.5)
        t_out = time.time()
        c.replica_proc = start_policy(c, n1, "policy-n1.log")
        _wait("n1 registered again", lambda: watch.registered_since("n1", t_out), 900, 2)
        t_back = watch.registered_since("n1", t_out)
        status_back = c.run_status(run_id)
        base.wait_finished(c, run_id)
        once = base.assert_every_job_once(c, run_id, EPISODES)
        served_after_restart = vllm_metric(replica_url(n1), "request_success_total")
        served_n0 = vllm_metric(replica_url(n0), "request_success_total")
    finally:
        watch.stopping.set()
        watch.join(timeout=10)
    records = run_records(c, run_id)
    joined = re.findall(r"replica n1 joined \(loaded (.*)\)", (c.logs / "sidecar-n1.log").read_text())
    on_both = sorted(v for v, ids in watch.seen_on.items() if ids >= {"n0", "n1"})
    base.FIGURES["replica_restarted"] = {
        "episodes": EPISODES,
        "replicas": "vLLM CPU (tiny Qwen3-VL) on n0 and on n1, each with its sidecar",
        "killed_at_episode": int(0.3 * EPISODES),
        "processes_killed": killed,
        "kill_to_deregistered_s": round(t_out - t_kill, 1),
        "kill_to_registered_again_s": round(t_back - t_kill, 1),
        "episodes_done_when_back": status_back["episodes_done"],
        "sidecar_n1_joins_loaded": joined,
        "versions_published": len(watch.published),
        "versions_seen_on_both_replicas": len(on_both),
        "registry_checks": watch.checks,
        "registered_replica_lacking_a_live_version": len(watch.violations),
        "registered_but_not_answering_ticks": watch.not_answering,
        "n1_requests_after_restart": served_after_restart,
        "n0_requests": served_n0,
        **records,
        **once,
    }
    print(json.dumps(base.FIGURES["replica_restarted"], indent=1))
    base.save_figures()
    assert status_back["episodes_done"] < EPISODES, "the run ended before the restarted replica came back"
    assert watch.violations == [], watch.violations[:5]
    assert len(joined) >= 2 and joined[-1] != "nothing", joined  # the restart loaded the live versions
    assert served_after_restart > 1, "no sample reached the restarted replica (1 = its warm-up)"
    assert records["dropped_stale"] == 0, records
    assert records["adapter_not_found_reaching_workers"] == 0 and records["jobs_failed_on_infra"] == 0, records
    assert records["replica_counters"].get("wrong_adapter", 0) == 0, records
