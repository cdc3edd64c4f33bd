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
        metrics, states = [], []
        for batch in batches(processor):
            metrics.append(learner.update(batch))
            states.append(learner.trainable_state())
        saved = CheckpointManager(Path(out) / "ckpts").save(learner, config={"world": WORLD})
        if rank == 0:
            torch.save({"states": states, "metrics": metrics, "checkpoint": str(saved.path)}, Path(out) / "ranks.pt")
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
def one_process(base_model, tiny_model_dir) -> tuple[Learner, list[dict], list[dict]]:
    learner = Learner(tiny_model(base_model), settings())
    metrics, states = [], []
    for batch in batches(load_processor(tiny_model_dir)):
        metrics.append(learner.update(batch))
        states.append(learner.trainable_state())
    return learner, metrics, states


@pytest.mark.slow
def test_two_gloo_ranks_give_one_process_update(two_ranks, one_process, base_model) -> None:
    _, metrics, states = one_process
    initial = Learner(tiny_model(base_model), settings()).trainable_state()
    first, ranked = states[0], two_ranks["states"][0]
    assert set(ranked) == set(first)
    lora_b = [name for name in first if "lora_B" in name]
    for name, value in first.items():
        torch.testing.assert_close(ranked[name], value, atol=1e-6, rtol=0, msg=name)
    # LoRA B starts at zero, so the first update moves B alone; every B moved, so the comparison means something.
    assert all(not torch.equal(first[name], initial[name]) for name in lora_b)
    # The second update moves A through the sharded B. Adam divides each gradient by its own size, so
    # a gradient entry near zero turns the ranks' other summation order into up to a few 1e-6 of a
    # parameter at this learning rate (1e-3); a gradient left unsummed over the ranks moves it ~1e-3.
    second, ranked = states[1], two_ranks["states"][1]
    for name, value in second.items():
        assert not torch.equal(value, initial[name]), name
        torch.testing.assert_close(ranked[name], value, atol=1e-5, rtol=0, msg=name)
    for ranked_metrics, single in zip(two_ranks["metrics"], metrics, strict=True):
        for key in ("train/tokens", "train/sequences", "train/skipped_sequences"):
            assert ranked_metrics[key] == single[key], key
        assert ranked_metrics["train/loss"] == pytest.approx(single["train/loss"], abs=1e-6)
        assert ranked_metrics["train/grad_norm"] == pytest.approx(single["train/grad_norm"], rel=1e-5)


@pytest.mark.slow
def test_a_checkpoint_of_two_ranks_resumes_in_one_process(two_ranks, one_process, base_model, tiny_model_dir) -> None:
    learner, _, _ = one_process
    resumed = Learner(tiny_model(base_model), settings())
    checkpoint = CheckpointManager(two_ranks["out"] / "ckpts").resume(resumed)
    assert checkpoint is not None and checkpoint.step == 2 and resumed.step == 2
    for name, value in two_ranks["states"][1].items():
        assert torch.equal(resumed.trainable_state()[name], value), name
    # AdamW's moments came back whole, in the one-process order of parameters.
    saved, alone = resumed.optimizer.state_dict()["state"], learner.optimizer.state_dict()["state"]
    assert set(saved) == set(alone) == set(range(len(learner.params)))
    for index, slots in alone.items():
        assert float(saved[index]["step"]) == float(slots["step"]) == 2.0
        for key in ("exp_avg", "exp_avg_sq"):
            # to float rounding of the tensor's own scale (an entry near zero differs in its last digits)
            scale = float(slots[key].abs().max())
            assert float((saved[index][key] - slots[key]).abs().max()) <= 1e-4 * scale, f"{index} {key}"
    # and the next update is the one process's next update (to the second update's tolerance, above)
    batch = batches(load_processor(tiny_model_dir))[0]
    before = learner.trainable_state()
    learner.update(batch)
    resumed.update(batch)
    for name, value in learner.trainable_state().items():
        assert not torch.equal(value, before[name]), name
        torch.testing.assert_close(resumed.trainable_state()[name], value, atol=1e-5, rtol=0, msg=name)


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
