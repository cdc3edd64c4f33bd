"""The learner across machines: ``HALO_TRAINER_LEARNER_NODES=2``, one rank on each of two network
namespaces (each its own address; they meet at node 0's ``HALO_TRAINER_LEARNER_RENDEZVOUS``), started
through ``halo_trainer.learner.launch`` as the trainer starts itself, gives one process's updates to
1e-6. Before the setting the launcher only knew ``--standalone --local-addr 127.0.0.1``: two hosts'
ranks could never meet."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

from halo_model.loading import load_model, load_processor
from halo_trainer.learner.learner import Learner
from tests.cluster.namespaces import Namespaces, namespace_marks
from tests.trainer.learner.test_fsdp_ranks import batches, one_thread, settings
from tests.trainer.learner.test_learner import tiny_model

pytestmark = namespace_marks()

ROOT = Path(__file__).resolve().parents[2]
PORT = 29561


def test_two_ranks_on_two_hosts_give_one_process_update(tiny_model_dir, tmp_path) -> None:
    with Namespaces(2) as ns:
        rendezvous = f"{ns.nodes[0].address}:{PORT}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HALO_", "WORLD_SIZE", "RANK", "MASTER_"))}
        env |= {"PYTHONPATH": str(ROOT), "HALO_TEST_MODEL": str(tiny_model_dir), "HALO_TEST_OUT": str(tmp_path)}
        # gloo finds its own address from the host name, which on these namespaces (one host name)
        # resolves to the loopback: each node names its interface, as a cluster whose host names do
        # not resolve to the address the others reach sets GLOO_SOCKET_IFNAME (NCCL_SOCKET_IFNAME).
        env["GLOO_SOCKET_IFNAME"] = "eth0"
        starts = [
            ns.popen(
                node,
                [
                    sys.executable, "-c",
                    "from halo_trainer.learner.launch import launch; "
                    f"raise SystemExit(launch(1, 2, {rank}, {rendezvous!r}, 'tests.cluster.learner_across_hosts'))",
                ],
                env=env,
                log=tmp_path / f"node{rank}.log",
                cwd=ROOT,
            )
            for rank, node in enumerate(ns.nodes)
        ]  # fmt: skip
        codes = [proc.wait(timeout=300) for proc in starts]
        logs = {p.name: p.read_text(errors="replace")[-3000:] for p in sorted(tmp_path.glob("node*.log"))}
        assert codes == [0, 0], logs
    across = torch.load(tmp_path / "across_hosts.pt", weights_only=False)
    assert across["world"] == 2

    learner = Learner(tiny_model(load_model(tiny_model_dir)), settings())
    with one_thread():
        states = []
        for batch in batches(load_processor(tiny_model_dir)):
            learner.update(batch)
            states.append(learner.trainable_state())
    for mine, theirs in zip(states, across["states"], strict=True):
        assert mine.keys() == theirs.keys()
        gap = max(float((mine[k] - theirs[k]).abs().max()) for k in mine)
        assert gap < 1e-6, gap
