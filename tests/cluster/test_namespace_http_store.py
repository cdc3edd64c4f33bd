"""The release tier without a shared filesystem: runs whose data crosses only through the head's
data server (``HALO_STORE_BACKEND=http``, docs/cluster.md "The data plane").

The rollout nodes n1 and n2 each see an empty folder of their own at the head's data path: their
``halo cluster join`` bind-mounts it there inside its own mount namespace (``ip netns exec`` gives
every command one, so the mount never reaches the host or the head), and the raylet, the node's
services and its workers inherit that view. So a screenshot a node's env takes reaches the learner
on the head only through an upload, and a search tree an MCTS worker writes only through its upload.

The runs sample from two policy replicas (``HALO_TRAINER_POLICY_REPLICAS``): vLLM on the head, which
loads each adapter from the head's folder, and vLLM on n1 in n1's own folder, whose sidecar
(``halo cluster replica`` on the http store: ``fetches_adapters``) fetches each adapter version
through the data server before vLLM loads it; the version becomes the current policy only once both
list it.

What must hold: a GRPO run and an MCTS run finish with every job acknowledged once; every
screenshot the nodes took is on the head, and the learner read them there; each search's tree is on
the head, and the DPO steps were made from them; n1's replica fetched the adapter versions into its
own folder and answered samples from them.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

import httpx
import pytest
import redis

from tests.cluster.namespaces import Namespaces, Node, namespace_marks

pytestmark = namespace_marks()

from tests.cluster import test_namespace_replicas as replicas  # noqa: E402
from tests.cluster import test_namespaces as base  # noqa: E402
from tests.cluster.namespace_cluster import RAY_PORT, NamespaceCluster, _wait  # noqa: E402
from tests.cluster.test_namespace_replicas import PREFIX, replica_url  # noqa: E402

STORE_PORT = 6381


def own_folder(c: NamespaceCluster, node: Node) -> Path:
    """The folder a rollout node sees at the head's data path, as the host sees it."""
    return c.data_dir.parent / node.name


def in_own_folder(c: NamespaceCluster, node: Node, argv: list[str]) -> list[str]:
    """``argv`` with the node's own folder mounted over the head's data path (in the mount namespace
    ``ip netns exec`` made for this command alone); every process it starts inherits the view."""
    folder = own_folder(c, node)
    folder.mkdir(exist_ok=True)
    return ["sh", "-c", 'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", str(folder), str(c.data_dir), *argv]


def join_with_a_folder_of_its_own(c: NamespaceCluster, node: Node, token: str) -> None:
    join = [sys.executable, "-m", "halo.cli.main", "cluster", "join", "--address", f"{c.head.address}:{RAY_PORT}"]
    join += ["--node-ip", node.address]
    # The node cannot read the head's token file (it sees its own empty folder): it is given it.
    done = c.ns.run(node, in_own_folder(c, node, join), env=c.env(RAY_AUTH_TOKEN=token), timeout=300)
    assert done.returncode == 0, f"{node.name} did not join:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pytest.importorskip("ray")
    root = tmp_path_factory.mktemp("nshttp")
    with Namespaces(3) as ns:
        n0, n1, _ = ns.nodes
        store = {
            "HALO_STORE_BACKEND": "http",
            "HALO_STORE_HOST": n0.address,
            "HALO_STORE_PORT": str(STORE_PORT),
            "HALO_STORE_HEAD_URL": f"http://{n0.address}:{STORE_PORT}",
        }
        # The supervisor ships the store and the replica registry to the nodes' workers.
        c = NamespaceCluster(ns, root / "head", extra_env={**store, "HALO_CLUSTER_POLICY_REPLICAS": "true"})
        c.data_dir.mkdir()
        sidecars = []
        try:
            c.start_head()
            token = (c.data_dir / "cluster" / "ray_token").read_text().strip()
            # n1's vLLM builds the tiny model in n1's folder (from its seed: the head's weights),
            # as a machine of its own would download it; it starts while the nodes join.
            in_n1_folder = functools.partial(in_own_folder, c, n1)
            c.replica_proc = replicas.start_policy(c, n1, "policy-n1.log", wrap=in_n1_folder)
            for node in ns.nodes[1:]:
                join_with_a_folder_of_its_own(c, node, token)
            c.wait_nodes(ns.nodes[1:])
            # The trainer runs on the head and uses the head's folder itself (the head's Compose
            # file gives the supervisor alone the HALO_STORE_* settings, which it ships to the nodes).
            c.extra_env = {"HALO_TRAINER_POLICY_REPLICAS": PREFIX}
            c.start_trainer()
            c.wait_head_ready()
            _wait("vLLM on n1", lambda: httpx.get(f"{replica_url(n1)}/health", timeout=5).is_success, 900, 2)
            sidecars = [
                replicas.start_sidecar(c, n0, "n0"),  # the head's folder: vLLM loads the head's paths
                # n1's fetches each version through the data server into n1's folder.
                replicas.start_sidecar(c, n1, "n1", env=c.env(**store, HALO_STORE_TOKEN=token), wrap=in_n1_folder),
            ]
            replicas.await_registered(c, "n0", "n1")
            yield c
        except BaseException:
            print(c.dump_logs())
            raise
        finally:
            replicas.stop_sidecars(sidecars)
            down = c.halo(n0, "cluster", "down", timeout=120)
            print(down.stdout, down.stderr)  # n1's vLLM ends with its namespace


def _files(folder: Path, under: str) -> dict[str, Path]:
    return {str(p.relative_to(folder)): p for p in (folder / under).rglob("*") if p.is_file()}


def _sampled_by_replica(c: NamespaceCluster, run_id: str) -> dict[str, dict[int, int]]:
    """Replica -> policy version -> how many of the run's training transitions it answered."""
    counts: dict[str, dict[int, int]] = {}
    for _, fields in redis.Redis.from_url(c.redis_url).xrange(f"halo:run:{run_id}:results"):
        result = json.loads(fields[b"data"])
        for t in result["transitions"] if result.get("purpose", "train") == "train" else []:
            version = counts.setdefault(t["prompt"]["replica"] or "?", {})
            version[t["policy_version"]] = version.get(t["policy_version"], 0) + 1
    return counts


def _node_folders(c: NamespaceCluster) -> list[Path]:
    return [own_folder(c, node) for node in c.ns.nodes[1:]]


def test_the_nodes_see_folders_of_their_own(cluster: NamespaceCluster) -> None:
    """The head's probe is not in a node's folder: each node passed the probe through the data server."""
    status = cluster.status()
    assert {n.state for n in status.nodes} == {"running"}, status
    assert (cluster.data_dir / "cluster" / "store-probe").exists()
    for folder in _node_folders(cluster):
        assert not (folder / "cluster" / "store-probe").exists(), folder


def test_a_grpo_run_crosses_only_through_the_data_server(cluster: NamespaceCluster) -> None:
    started = time.monotonic()
    run_id = base.submit(cluster, 16, "ns-http")
    base.wait_finished(cluster, run_id)
    figures = base.assert_every_job_once(cluster, run_id, 16)

    # Each node's env kept its screenshots in its own folder and added each to the head's.
    head = _files(cluster.data_dir, "screenshots")
    taken = [_files(folder, "screenshots") for folder in _node_folders(cluster)]
    assert all(taken), "a node took no screenshot"
    for files in taken:
        assert set(files) <= set(head), sorted(set(files) - set(head))[:3]
        for name, path in files.items():
            assert path.read_bytes() == head[name].read_bytes(), name
    metrics = [json.loads(x) for x in (Path(cluster.run_status(run_id)["run_dir"]) / "metrics.jsonl").open()]
    assert len(metrics) == 4 and all(m["train/tokens"] > 0 for m in metrics), metrics

    # n1's replica fetched each adapter version into n1's folder, byte-equal, and sampled from them.
    adapters = f"runs/{run_id}/adapters"
    on_head = _files(cluster.data_dir, adapters)
    fetched = _files(own_folder(cluster, cluster.ns.nodes[1]), adapters)
    assert fetched and set(fetched) <= set(on_head), (sorted(fetched), sorted(on_head))
    assert all(path.read_bytes() == on_head[name].read_bytes() for name, path in fetched.items())
    versions = sorted({Path(name).parts[3] for name in fetched})
    records = replicas.run_records(cluster, run_id)
    by_replica = _sampled_by_replica(cluster, run_id)
    assert by_replica.get("n1", {}).keys() - {0}, by_replica  # n1 answered from a fetched adapter
    assert records["adapter_not_found_reaching_workers"] == 0 and records["dropped_stale"] == 0, records
    figures |= {
        "screenshots_on_head": len(head),
        "screenshots_per_node": [len(files) for files in taken],
        "adapter_versions_fetched_by_n1": versions,
        "transitions_by_replica_and_version": {r: dict(sorted(v.items())) for r, v in by_replica.items()},
        "replica_counters": records["replica_counters"],
        "seconds": round(time.monotonic() - started, 1),
    }
    print("grpo over the data server:", figures)
    base.FIGURES["http_store_grpo"] = figures


def test_an_mcts_run_learns_from_trees_it_got_through_the_data_server(cluster: NamespaceCluster) -> None:
    search = {"simulations": 4, "max_children": 3, "max_depth": 2, "theta": 0.01, "widening": 0, "dense_return": True}
    body = {**base.RUN, "algorithm": "mcts", "episodes": 2, "jobs_per_update": 1, "name": "ns-http-mcts", **search}
    body.pop("num_generations")
    with cluster.api() as api:
        created = api.post("/runs", json=body)
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
    status = base.wait_finished(cluster, run_id)
    run_dir = Path(status["run_dir"])
    trees = sorted(p.name for p in (run_dir / "trees").glob("*.json"))
    assert trees == [f"{run_id}-j0.json", f"{run_id}-j1.json"], trees
    # Written on a node, in the node's own folder, and added to the head's.
    relative = run_dir.relative_to(cluster.data_dir) / "trees"
    on_nodes = sorted(p.name for folder in _node_folders(cluster) for p in (folder / relative).glob("*.json"))
    assert on_nodes == trees, on_nodes
    metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").open()]
    pairs = [m["dpo/pairs"] for m in metrics]
    assert any(p > 0 for p in pairs) and status["policy_version"] == sum(1 for p in pairs if p > 0), pairs
    figures = {"trees": len(trees), "dpo_pairs": pairs, "policy_version": status["policy_version"]}
    print("mcts over the data server:", figures)
    base.FIGURES["http_store_mcts"] = figures
    base.save_figures()
