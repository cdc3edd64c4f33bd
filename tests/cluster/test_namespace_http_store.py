"""The release tier without a shared filesystem: runs whose data crosses only through the head's
data server (``HALO_STORE_BACKEND=http``, docs/cluster.md "The data plane").

The rollout nodes n1 and n2 each see an empty folder of their own at the head's data path: their
``halo cluster join`` bind-mounts it there inside its own mount namespace (``ip netns exec`` gives
every command one, so the mount never reaches the host or the head), and the raylet, the node's
services and its workers inherit that view. So a screenshot a node's env takes reaches the learner
on the head only through an upload, and a search tree an MCTS worker writes only through its upload.

What must hold: a GRPO run and an MCTS run finish with every job acknowledged once; every
screenshot the nodes took is on the head, and the learner read them there; each search's tree is on
the head, and the DPO steps were made from them; the head's folder holds nothing the nodes wrote
in place.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.cluster.namespaces import Namespaces, Node, namespace_marks

pytestmark = namespace_marks()

from tests.cluster import test_namespaces as base  # noqa: E402
from tests.cluster.namespace_cluster import RAY_PORT, NamespaceCluster  # noqa: E402

STORE_PORT = 6381


def join_with_a_folder_of_its_own(c: NamespaceCluster, node: Node, folder: Path, token: str) -> None:
    """``halo cluster join`` with ``folder`` mounted over the head's data path, for this node only."""
    folder.mkdir(parents=True)
    join = [sys.executable, "-m", "halo.cli.main", "cluster", "join", "--address", f"{c.head.address}:{RAY_PORT}"]
    join += ["--node-ip", node.address]
    argv = ["sh", "-c", 'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", str(folder), str(c.data_dir), *join]
    # The node cannot read the head's token file (it sees its own empty folder): it is given it.
    done = c.ns.run(node, argv, env=c.env(RAY_AUTH_TOKEN=token), timeout=300)
    assert done.returncode == 0, f"{node.name} did not join:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pytest.importorskip("ray")
    root = tmp_path_factory.mktemp("nshttp")
    with Namespaces(3) as ns:
        head = ns.nodes[0].address
        store = {
            "HALO_STORE_BACKEND": "http",
            "HALO_STORE_HOST": head,
            "HALO_STORE_PORT": str(STORE_PORT),
            "HALO_STORE_HEAD_URL": f"http://{head}:{STORE_PORT}",
        }
        c = NamespaceCluster(ns, root / "head", extra_env=store)
        c.data_dir.mkdir()
        try:
            c.start_head()
            token = (c.data_dir / "cluster" / "ray_token").read_text().strip()
            for node in ns.nodes[1:]:
                join_with_a_folder_of_its_own(c, node, root / node.name, token)
            c.wait_nodes(ns.nodes[1:])
            # The trainer runs on the head and uses the head's folder itself (the head's Compose
            # file gives the supervisor alone the HALO_STORE_* settings, which it ships to the nodes).
            c.extra_env = {}
            c.start_trainer()
            c.wait_head_ready()
            yield c
        except BaseException:
            print(c.dump_logs())
            raise
        finally:
            down = c.halo(ns.nodes[0], "cluster", "down", timeout=120)
            print(down.stdout, down.stderr)


def _files(folder: Path, under: str) -> dict[str, Path]:
    return {str(p.relative_to(folder)): p for p in (folder / under).rglob("*") if p.is_file()}


def _node_folders(c: NamespaceCluster) -> list[Path]:
    return [c.data_dir.parent / node.name for node in c.ns.nodes[1:]]


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
    figures |= {
        "screenshots_on_head": len(head),
        "screenshots_per_node": [len(files) for files in taken],
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
