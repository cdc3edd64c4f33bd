"""Search trees through the data plane: an MCTS worker whose data folder is not the head's (the
``http`` store) adds each tree it writes to the head's folder, at the same relative path, so the head's
loop and viewer read it where they read a shared folder's.

Real processes on one machine, two folders: the head's served by the real data server, the node's
own; the search runs on the in-process stand-ins (tests/trainer/mcts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from halo.store import HttpStore
from halo_trainer.mcts.jobs import run_search_job
from halo_trainer.mcts.tree import load_tree
from tests.cluster.data_server import serve_data
from tests.conftest import stop_services
from tests.trainer.mcts.search_stand_ins import SnapshotEnv, root_succeeds
from tests.trainer.stand_ins import PolicyStandIn, job_for, services

pytestmark = pytest.mark.slow  # the data server as a process
TOKEN = "d" * 64


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("head")
    proc, url = serve_data(root, TOKEN)
    yield root, url
    stop_services([proc])


async def test_a_nodes_search_tree_reaches_the_heads_run_folder(head, tmp_path: Path) -> None:
    root, url = head
    node = tmp_path / "node"
    svc = services(env=SnapshotEnv(), policy=PolicyStandIn(root_succeeds))
    svc.head_store = HttpStore(url, TOKEN, node)
    job = job_for(
        "run-t1", kind="search", mcts={"simulations": 4, "max_children": 3, "critic": "progress", "widening": 0.0}
    )
    try:
        result = await run_search_job(svc, job, node / "runs")
    finally:
        svc.head_store.close()
    assert result.infra_error is None and result.search is not None
    written = Path(result.search.tree_file)
    rel = written.relative_to(node)
    assert rel == Path("runs", job.run_id, "trees", f"{job.job_id}.json")
    assert (root / rel).read_bytes() == written.read_bytes()
    assert load_tree(root / rel).record.simulations == 4


def test_the_data_server_adds_a_tree_once_and_never_replaces_it(head, tmp_path: Path) -> None:
    root, url = head
    store = HttpStore(url, TOKEN, tmp_path)
    try:
        store.write_new("runs/r9/trees/s1.json", b'{"a": 1}')
        store.write_new("runs/r9/trees/s1.json", b'{"a": 1}')  # a retried upload
        assert (root / "runs/r9/trees/s1.json").read_bytes() == b'{"a": 1}'
        with pytest.raises(FileExistsError, match="never replaced"):
            store.write_new("runs/r9/trees/s1.json", b'{"a": 2}')
        assert (root / "runs/r9/trees/s1.json").read_bytes() == b'{"a": 1}'
        for refused in ("runs/r9/config.json", "runs/r9/trees/s1.txt", "runs/r9/adapters/v1/a.json", "cluster/x.json"):
            with pytest.raises(ValueError, match="may be added"):
                store.write_new(refused, b"{}")
            assert not (root / refused).exists()
    finally:
        store.close()


async def test_a_tree_the_head_refuses_is_an_infrastructure_failure(head, tmp_path: Path) -> None:
    root, url = head
    job = job_for(
        "run-t3", kind="search", mcts={"simulations": 2, "max_children": 2, "critic": "progress", "widening": 0.0}
    )
    clash = root / "runs" / job.run_id / "trees" / f"{job.job_id}.json"
    clash.parent.mkdir(parents=True, exist_ok=True)
    clash.write_text('{"another": "search"}')  # the same job searched elsewhere first
    svc = services(env=SnapshotEnv(), policy=PolicyStandIn(root_succeeds))
    svc.head_store = HttpStore(url, TOKEN, tmp_path / "node")
    try:
        result = await run_search_job(svc, job, tmp_path / "node" / "runs")
    finally:
        svc.head_store.close()
    assert result.search is None and "did not reach the head" in (result.infra_error or "")
    assert clash.read_text() == '{"another": "search"}'
