"""One rank of the learner across machines, as ``halo_trainer.learner.launch`` starts it on each node
(``python -m tests.cluster.learner_across_hosts`` in place of ``-m halo_trainer``): the ranks of
every node make one process group (``Ranks.from_env``: gloo over the nodes' addresses), build the
learner the trainer builds, take test_fsdp_ranks' updates, and rank 0 writes the adapter after each
to ``HALO_TEST_OUT`` for the test to compare with one process."""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.distributed as dist

from halo_model.loading import load_model, load_processor
from halo_trainer.learner.distributed import Ranks
from halo_trainer.learner.learner import Learner
from tests.trainer.learner.test_fsdp_ranks import batches, settings
from tests.trainer.learner.test_learner import tiny_model


def main() -> None:
    torch.set_num_threads(1)  # as the one process the test compares with (test_fsdp_ranks.one_thread)
    model_dir, out = os.environ["HALO_TEST_MODEL"], Path(os.environ["HALO_TEST_OUT"])
    ranks = Ranks.from_env()
    try:
        learner = Learner(tiny_model(load_model(model_dir)), settings(), ranks=ranks)
        metrics, states = [], []
        for batch in batches(load_processor(model_dir)):
            metrics.append(learner.update(batch))
            states.append(learner.trainable_state())
        if ranks.writes:
            found = {"states": states, "metrics": metrics, "world": ranks.world_size}
            torch.save(found, out / "across_hosts.pt")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
