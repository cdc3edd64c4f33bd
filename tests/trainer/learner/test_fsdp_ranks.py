"""The learner across ranks (FSDP2, ``halo_trainer.learner.distributed``): two gloo ranks on the CPU,
real processes, give one process's update, and a checkpoint they write resumes in one process."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from halo_model.loading import load_model, load_processor
from halo_trainer.learner.checkpoint import CheckpointManager
from halo_trainer.learner.distributed import Ranks, share
from halo_trainer.learner.learner import Learner
from tests.trainer.learner.test_learner import config, group_batch, mixed_batch, tiny_model

WORLD = 2


def settings():
    # One row per micro-batch: three micro-batches, so one rank scores two and the other one and a repeat.
    return config(micro_batch_size=1)


def batches(processor):
    return [mixed_batch(processor, [1.0, -0.5, 0.7]), group_batch(processor, [0.3, -1.0, 0.0, 1.0])]


def _rank(rank: int, port: int, model_dir: str, out: str) -> None:
    """One rank: the same model, seed and batches as the one-process learner."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        base = load_model(model_dir)
        learner = Learner(tiny_model(base), settings(), ranks=Ranks.of_group("cpu"))
        processor = load_processor(model_dir)
        metrics = [learner.update(batch) for batch in batches(processor)]
        state = learner.trainable_state()
        saved = CheckpointManager(Path(out) / "ckpts").save(learner, config={"world": WORLD})
        if rank == 0:
            torch.save({"state": state, "metrics": metrics, "checkpoint": str(saved.path)}, Path(out) / "ranks.pt")
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_ranks(tiny_model_dir, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("ranks")
    mp.spawn(_rank, args=(_free_port(), str(tiny_model_dir), str(out)), nprocs=WORLD, join=True)
    return torch.load(out / "ranks.pt", weights_only=False) | {"out": out}


@pytest.fixture(scope="module")
def one_process(base_model, tiny_model_dir) -> tuple[Learner, list[dict]]:
    learner = Learner(tiny_model(base_model), settings())
    processor = load_processor(tiny_model_dir)
    return learner, [learner.update(batch) for batch in batches(processor)]


@pytest.mark.slow
def test_two_gloo_ranks_give_one_process_update(two_ranks, one_process, base_model) -> None:
    learner, metrics = one_process
    alone = learner.trainable_state()
    initial = Learner(tiny_model(base_model), settings()).trainable_state()
    assert set(two_ranks["state"]) == set(alone)
    moved = 0
    for name, value in alone.items():
        print("DBG", name[-60:], float((two_ranks["state"][name] - value).abs().max()), float((value - initial[name]).abs().max()), float((two_ranks["state"][name] - initial[name]).abs().max()))
    for ranked, single in zip(two_ranks["metrics"], metrics, strict=True):
        print("DBG", {k: (ranked[k], single[k]) for k in single})
    for name, value in alone.items():
        torch.testing.assert_close(two_ranks["state"][name], value, atol=1e-6, rtol=0, msg=name)
        moved += int(not torch.equal(value, initial[name]))
    assert moved == len(alone)  # two updates: LoRA A and B both moved, so the comparison means something
    for ranked, single in zip(two_ranks["metrics"], metrics, strict=True):
        for key in ("train/tokens", "train/sequences", "train/skipped_sequences"):
            assert ranked[key] == single[key], key
        assert ranked["train/loss"] == pytest.approx(single["train/loss"], abs=1e-6)
        assert ranked["train/grad_norm"] == pytest.approx(single["train/grad_norm"], rel=1e-5)


@pytest.mark.slow
def test_a_checkpoint_of_two_ranks_resumes_in_one_process(two_ranks, one_process, base_model, tiny_model_dir) -> None:
    learner, _ = one_process
    resumed = Learner(tiny_model(base_model), settings())
    checkpoint = CheckpointManager(two_ranks["out"] / "ckpts").resume(resumed)
    assert checkpoint is not None and checkpoint.step == 2 and resumed.step == 2
    for name, value in learner.trainable_state().items():
        torch.testing.assert_close(resumed.trainable_state()[name], value, atol=1e-6, rtol=0, msg=name)
    # the optimiser's moments came back whole: the next update is the one process's next update
    batch = batches(load_processor(tiny_model_dir))[0]
    reference = Learner(tiny_model(base_model), settings())
    for step_batch in batches(load_processor(tiny_model_dir)):
        reference.update(step_batch)
    reference.update(batch)
    resumed.update(batch)
    for name, value in reference.trainable_state().items():
        torch.testing.assert_close(resumed.trainable_state()[name], value, atol=1e-6, rtol=0, msg=name)


@pytest.mark.parametrize(
    ("count", "world", "expected"),
    [
        (3, 2, [[(0, True), (2, True)], [(1, True), (0, False)]]),
        (1, 2, [[(0, True)], [(0, False)]]),
        (0, 2, [[], []]),
        (4, 2, [[(0, True), (2, True)], [(1, True), (3, True)]]),
    ],
)
def test_share_gives_every_rank_the_same_number_of_passes(count, world, expected) -> None:
    micro = [[i] for i in range(count)]
    got = [
        [(rows[0], counts) for rows, counts in share(micro, Ranks(rank=r, world_size=world, mesh=None))]  # type: ignore[arg-type]
        for r in range(world)
    ]
    assert got == expected
