"""The learner across ranks (FSDP2, ``halo_trainer.learner.distributed``): two gloo ranks on the CPU,
real processes, give one process's update, and a checkpoint they write resumes in one process; the
memory plan of the sharded layout."""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.tensor import DTensor

from halo_model.inputs import SampleRecord, build_batch
from halo_model.loading import load_model, load_processor
from halo_trainer.checks import memory_plan_cli
from halo_trainer.learner.checkpoint import CheckpointManager
from halo_trainer.learner.distributed import Ranks, share
from halo_trainer.learner.dpo import DPOStats
from halo_trainer.learner.dpo_update import dpo_update
from halo_trainer.learner.learner import Learner
from halo_trainer.learner.learner_batch import LearnerBatch
from halo_trainer.learner.memory.dims import GIB, QWEN3_VL_8B
from halo_trainer.learner.memory.parts import Workload, breakdown
from tests.conftest import noise_png
from tests.trainer.learner.test_learner import GOAL, config, group_batch, mixed_batch, tiny_model

WORLD = 2


def settings():
    """One row per micro-batch: three micro-batches, so one rank scores two and the other one and a repeat.

    AdamW's first steps move a parameter by about lr x g / (|g| + eps): at the default eps (1e-8) a
    gradient entry near zero turns the ranks' other summation order (float rounding, ~1e-13) into up
    to a few 1e-6 of a parameter at lr 1e-3 (3.5e-6 measured). eps 1e-6 bounds that sensitivity at
    lr / eps = 1e3 per unit of gradient, so rounding stays far below 1e-6, while a gradient left unsummed
    over the ranks (an error of the gradient's own size) still moves a parameter by ~1e-3."""
    return config(micro_batch_size=1, adam_eps=1e-6)


def batches(processor):
    return [mixed_batch(processor, [1.0, -0.5, 0.7]), group_batch(processor, [0.3, -1.0, 0.0, 1.0])]


def pairs(processor) -> tuple[LearnerBatch, LearnerBatch]:
    """Three preference pairs, two at one state and one at another."""
    states = [
        (GOAL, noise_png(64, 64, seed=1)),
        (GOAL, noise_png(64, 64, seed=1)),
        ("Open the tab.", noise_png(96, 64, 3)),
    ]

    def side(completions: list[list[int]]) -> LearnerBatch:
        records = [SampleRecord(goal, [], [png], c) for (goal, png), c in zip(states, completions, strict=True)]
        return LearnerBatch(inputs=build_batch(processor, records), advantages=torch.zeros(len(records)))

    return side([[10, 11, 12], [13], [14, 15]]), side([[20, 21], [10, 11, 12], [22]])


def dpo_step(base: torch.nn.Module, processor, ranks: Ranks | None = None) -> tuple[dict, dict]:
    """One DPO step in float64. In float32 one entry of the 4,096 LoRA B entries differs by 8e-6 between
    two ranks and one process: its gradient cancels to 3e-7 from terms of ~0.1 and float32's rounding of
    those terms (~1e-8) is 3 % of it, which AdamW's division by |g| + eps turns into 8e-6 of the
    parameter. float64 keeps the ranks' other summation order below 1e-12, so the 1e-6 check can only fail
    on a real difference."""
    learner = Learner(tiny_model(base).double(), settings(), ranks=ranks)
    chosen, rejected = pairs(processor)
    ref_w, ref_r = learner.logprobs(chosen, adapter=False), learner.logprobs(rejected, adapter=False)
    metrics = dpo_update(learner, chosen, rejected, ref_w, ref_r, beta=0.5, rpo_alpha=0.1)
    return metrics, learner.trainable_state()


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
        dpo = dpo_step(base, processor, Ranks.of_group("cpu"))
        if rank == 0:
            found = {"states": states, "metrics": metrics, "checkpoint": str(saved.path), "dpo": dpo}
            torch.save(found, Path(out) / "ranks.pt")
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


@contextlib.contextmanager
def one_thread():
    """The ranks' thread count. With two threads a matrix product sums in another order than with one,
    which put the one-process update 3.7e-7 from the ranks' here and past 1e-6 on a busier machine;
    with one thread each the ranks and the one process differ only by where the gradients are summed
    (0.0 measured), so the 1e-6 check measures the sharding, not the thread pool."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def one_process(base_model, tiny_model_dir) -> tuple[Learner, list[dict], list[dict]]:
    learner = Learner(tiny_model(base_model), settings())
    metrics, states = [], []
    with one_thread():
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
    # The second update moves A through the sharded B.
    second, ranked = states[1], two_ranks["states"][1]
    for name, value in second.items():
        assert not torch.equal(value, initial[name]), name
        torch.testing.assert_close(ranked[name], value, atol=1e-6, rtol=0, msg=name)
    for ranked_metrics, single in zip(two_ranks["metrics"], metrics, strict=True):
        for key in ("train/tokens", "train/sequences", "train/skipped_sequences"):
            assert ranked_metrics[key] == single[key], key
        assert ranked_metrics["train/loss"] == pytest.approx(single["train/loss"], abs=1e-6)
        assert ranked_metrics["train/grad_norm"] == pytest.approx(single["train/grad_norm"], rel=1e-5)


@pytest.mark.slow
def test_two_gloo_ranks_give_one_process_dpo_step(two_ranks, base_model, tiny_model_dir) -> None:
    metrics, state = dpo_step(base_model, load_processor(tiny_model_dir))
    ranked_metrics, ranked = two_ranks["dpo"]
    initial = Learner(tiny_model(base_model).double(), settings()).trainable_state()
    assert all(not torch.equal(state[name], initial[name]) for name in state if "lora_B" in name)
    for name, value in state.items():
        torch.testing.assert_close(ranked[name], value, atol=1e-6, rtol=0, msg=name)
    assert ranked_metrics["dpo/grad_norm"] == pytest.approx(metrics["dpo/grad_norm"], rel=1e-5)
    for key in ("dpo/loss", "dpo/pairs"):
        if key in metrics:
            assert ranked_metrics[key] == pytest.approx(metrics[key], rel=1e-5), key


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
    # and the next update is the one process's next update
    batch = batches(load_processor(tiny_model_dir))[0]
    before = learner.trainable_state()
    learner.update(batch)
    resumed.update(batch)
    for name, value in learner.trainable_state().items():
        assert not torch.equal(value, before[name]), name
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


def test_the_memory_plan_divides_what_fsdp2_shards() -> None:
    one = breakdown(QWEN3_VL_8B, Workload())[0]
    eight = breakdown(QWEN3_VL_8B, Workload(learner_gpus=8))[0]
    by_name = {name: gib for name, gib, _ in one}
    sharded = {name: gib for name, gib, _ in eight}
    for name in ("weights", "LoRA + grads + AdamW"):
        assert sharded[name] == pytest.approx(by_name[name] / 8), name
    # the embeddings (or lm_head) and the prefetched next unit are whole on every card
    embeddings = QWEN3_VL_8B.vocab_size * QWEN3_VL_8B.hidden_size
    assert sharded["units gathered whole (FSDP2)"] == pytest.approx(2 * embeddings * 2 / GIB)
    assert "units gathered whole (FSDP2)" not in by_name
    assert sharded["decoder activations"] == by_name["decoder activations"]  # a micro-batch is one card's
    assert sum(sharded.values()) < sum(by_name.values()) - 10


def test_memory_plan_cli_takes_the_learner_gpus(capsys) -> None:
    assert memory_plan_cli.main(["--card", "h100-80gb", "--two-cards", "--learner-gpus", "8"]) == 0
    assert "per card of a learner on 8 GPUs (FSDP2)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        memory_plan_cli.main(["--card", "h100-80gb", "--learner-gpus", "0"])
    assert "--learner-gpus 0: at least 1" in capsys.readouterr().err


def test_ranks_from_the_environment_refuse_a_half_set_one(monkeypatch) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    one = Ranks.from_env()  # one process: rank 0 of 1, nothing to shard over, its own values
    assert (one.rank, one.world_size, one.mesh, one.several, one.writes) == (0, 1, None, False, True)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE='two'"):
        Ranks.from_env()
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="RANK is not set: start the learner with torchrun"):
        Ranks.from_env()


def test_full_weights_across_ranks_are_refused_with_the_reason(base_model) -> None:
    ranks = Ranks(rank=0, world_size=2, mesh=None)  # type: ignore[arg-type]  # refused before any collective
    with pytest.raises(ValueError, match="across ranks is not supported yet"):
        Learner(tiny_model(base_model), config(full_weights=["vision"]), ranks=ranks)


def test_one_process_ranks_share_every_micro_batch_gather_its_own_value_and_wait_for_no_one() -> None:
    """``Ranks()`` is what one process does, with no process group started: the learner takes the
    same path for one process as for several."""
    one = Ranks()
    assert one.share([[0, 1], [2], [3, 4]]) == [([0, 1], True), ([2], True), ([3, 4], True)]
    assert one.share([]) == []
    assert one.gathered({"x": 1}) == [{"x": 1}]
    stats = DPOStats(pairs=2, loss_sum=1.5)
    assert one.merged(stats) is stats
    one.barrier()  # no process group: would raise if it reached torch.distributed
    model = torch.nn.Linear(2, 2)
    one.shard(model)
    assert not any(isinstance(p, DTensor) for p in model.parameters())
