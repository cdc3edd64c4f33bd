"""Ranks fail together (``halo_trainer.learner.ranks``): a learner call that raises on one rank ends
the update on every rank within seconds, with that rank's error. Two gloo ranks on the CPU, real
processes started as torchrun starts them, the tiny model, rank 0's ``Leader`` and rank 1's
``serve``; each case's update is made to fail on one rank only, or on both.

Each case runs under a hard timeout: ranks that hang (a follower's failure leaving rank 0 inside a
collective until the collective's timeout) fail the test instead of blocking it.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from halo_model.loading import load_processor
from halo_trainer.learner import ranks
from halo_trainer.learner.learner import Learner
from tests.conftest import free_port
from tests.trainer.learner.test_fsdp_ranks import batches, settings

WORLD = 2
ERROR = "this rank rejects the batch"
HANG = 150  # seconds: far past a failure's bound (ranks.ANSWER and a process's exit), far short of gloo's timeout


def _failing(where: str):
    """``Learner.update`` that fails on its second call: before its first collective, or after its last."""
    calls = {"n": 0}

    def update(learner: Learner, batch):
        calls["n"] += 1
        if calls["n"] == 2 and where == "before":
            raise ValueError(ERROR)
        metrics = Learner.update(learner, batch)
        if calls["n"] == 2 and where == "after":
            raise ValueError(ERROR)
        return metrics

    return update


def _rank(rank: int, port: int, model_dir: str, out: str, failing: dict[int, str]) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(WORLD), RANK=str(rank), LOCAL_RANK=str(rank)
    )
    torch.set_num_threads(1)
    # gloo's timeout at 300 s: what the old behaviour waited for, past the test's own bound.
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=300))
    channel = ranks.join()
    assert channel is not None
    if rank in failing:
        ranks.CALLS["update"] = _failing(failing[rank])
    found: dict = {}
    if rank == 0:
        leader = ranks.lead(model_dir, settings(), device="cpu", dtype="float32", seed=7)
        batch = batches(load_processor(model_dir))[0]
        leader.update(batch)  # both ranks make the first
        started = time.monotonic()
        try:
            leader.update(batch)
        except Exception as exc:
            found |= {"raised": type(exc).__name__, "message": str(exc)}
        found["seconds"] = time.monotonic() - started
        ranks.end_run()
        ranks.close()
    else:
        try:
            found["calls"] = ranks.serve(channel)
        except RuntimeError as exc:  # RankFailed: this rank leaves (its process exits)
            found["left"] = f"{type(exc).__name__}: {exc}"
    (Path(out) / f"rank{rank}.json").write_text(json.dumps(found))


def _two_ranks(model_dir, out: Path, failing: dict[int, str]) -> tuple[dict, dict, list[int | None]]:
    """Both ranks' findings and exit codes; a rank still running after ``HANG`` seconds is killed
    and fails the test."""
    context = multiprocessing.get_context("spawn")
    port = free_port()
    procs = [context.Process(target=_rank, args=(r, port, str(model_dir), str(out), failing)) for r in range(WORLD)]
    for proc in procs:
        proc.start()
    deadline = time.monotonic() + HANG
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    hung = [r for r, proc in enumerate(procs) if proc.is_alive()]
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join()
    assert not hung, f"rank(s) {hung} still running after {HANG} s: the ranks hang"
    found = [json.loads(p.read_text()) if (p := out / f"rank{r}.json").exists() else {} for r in range(WORLD)]
    print("found", found, [proc.exitcode for proc in procs])
    return found[0], found[1], [proc.exitcode for proc in procs]


@pytest.mark.slow
def test_rank_1_failing_before_a_collective_ends_rank_0s_update_with_its_error(tiny_model_dir, tmp_path) -> None:
    # Rank 1 raises while rank 0 already waits in the update's first collective.
    lead, follower, codes = _two_ranks(tiny_model_dir, tmp_path, {1: "before"})
    assert lead["raised"] == "RankFailed"
    assert lead["message"].startswith(f"rank 1: update failed: ValueError: {ERROR}")
    assert lead["seconds"] < 60, lead  # ANSWER (10 s) and rank 1's exit, on a loaded machine
    # Rank 1 left (its process ended, which ended rank 0's collective) saying why.
    assert follower["left"].startswith(f"RankFailed: rank 1: update failed: ValueError: {ERROR}")
    assert codes == [0, 0]


@pytest.mark.slow
def test_rank_1_failing_after_the_collectives_is_raised_on_rank_0_and_the_ranks_go_on(tiny_model_dir, tmp_path) -> None:
    lead, follower, codes = _two_ranks(tiny_model_dir, tmp_path, {1: "after"})
    assert (lead["raised"], lead["message"]) == ("RankFailed", f"rank 1: update failed: ValueError: {ERROR}")
    assert lead["seconds"] < 60, lead
    # No rank was left in a collective: rank 1 kept listening, dropped the run and heard the exit.
    assert follower == {"calls": ["update"]} and codes == [0, 0]


@pytest.mark.slow
def test_both_ranks_failing_alike_name_both_and_the_ranks_go_on(tiny_model_dir, tmp_path) -> None:
    lead, follower, codes = _two_ranks(tiny_model_dir, tmp_path, {0: "before", 1: "before"})
    line = f"update failed: ValueError: {ERROR}"
    assert (lead["raised"], lead["message"]) == ("RankFailed", f"rank 1: {line}; rank 0: {line}")
    assert follower == {"calls": ["update"]} and codes == [0, 0]


@pytest.mark.slow
def test_rank_0_failing_alone_before_a_collective_makes_rank_1_leave(tiny_model_dir, tmp_path) -> None:
    lead, follower, codes = _two_ranks(tiny_model_dir, tmp_path, {0: "before"})
    assert lead["raised"] == "RankFailed"
    assert lead["message"].startswith(f"rank 0: update failed: ValueError: {ERROR}; the other ranks were told")
    assert lead["seconds"] < 60, lead
    # Rank 1 waited in the update's collective: rank 0's word to leave ended its process.
    assert follower == {} and codes == [0, 1]


class _Gone:
    """A channel whose follower is gone: its word cannot be told."""

    def __init__(self, broken: str | None = None) -> None:
        import threading

        self.lock, self.broken = threading.Lock(), broken

    def tell(self, word: str) -> None:
        raise RuntimeError("Connection closed by peer [127.0.0.1]:1234")


def test_a_run_ends_on_rank_0_though_the_ranks_broke(monkeypatch) -> None:
    # end_run is in the run's `finally`, before its failure is recorded: it must not raise.
    channel = _Gone()
    monkeypatch.setattr(ranks, "_joined", channel)
    ranks.end_run()
    assert channel.broken == "a rank is gone: end failed: RuntimeError: Connection closed by peer [127.0.0.1]:1234"
    ranks.close()  # not told again: the ranks are broken
    # and a later learner call says why at once, telling nobody
    with pytest.raises(ranks.RankFailed, match="a rank is gone: end failed"):
        ranks.Leader(None, channel).update(None)  # type: ignore[arg-type]
