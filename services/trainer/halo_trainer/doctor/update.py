"""Check 4: one update of the learner a run gets here (``Learner.update`` on one group of samples):
its time, and its peak memory against the memory plan (``learner.memory``).

The plan's peak holds the process's CUDA context, which neither the allocator nor (on the CPU) the
learner's resident set shows, and a margin for the allocator's fragmentation, left as the tolerance:
the measured peak must stay under the plan's peak less the context. On the gpu target the plan must
also fit the card as it is now (vLLM holding its share), as a run's start requires.
"""

from __future__ import annotations

import time
from typing import Any

from halo.schemas.doctor import DoctorCheck
from halo_trainer.doctor.peak_memory import PeakMemory
from halo_trainer.learner.learner import Learner, LearnerBatch
from halo_trainer.learner.memory.parts import CUDA_CONTEXT_GIB

PLAN_FIX = (
    "`halo memory-plan` shows the plan; lower HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE or turn on gradient checkpointing"
)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def one_update(
    learner: Learner, batch: LearnerBatch, plan: Any, memory: PeakMemory, max_update_s: float
) -> list[DoctorCheck]:
    device = str(learner.device)
    _sync(device)
    memory.reset()
    started = time.perf_counter()
    metrics = learner.update(batch)
    _sync(device)
    seconds = time.perf_counter() - started
    peak = memory.peak_gib()
    rows = f"{len(batch)} samples, {int(metrics['train/tokens'])} tokens on {device}"
    timed = DoctorCheck(
        name="update time",
        ok=seconds <= max_update_s,
        figure=seconds,
        unit="s",
        bound="<=",
        threshold=max_update_s,
        detail=f"one update, {rows}",
        fix=None
        if seconds <= max_update_s
        else "the learner is far slower than expected: is it on the device you meant (HALO_TRAINER_DEVICE)?",
    )
    allowed = plan.peak_gib - CUDA_CONTEXT_GIB
    ok = peak <= allowed and plan.fits
    fix = None
    if not plan.fits:
        fix = f"the plan does not fit this card: {plan.verdict()}"
    elif peak > allowed:
        fix = f"the update took more than its plan: {PLAN_FIX}"
    held = DoctorCheck(
        name="update memory",
        ok=ok,
        figure=peak,
        unit="GiB",
        bound="<=",
        threshold=allowed,
        detail=f"{memory.what}; plan peak {plan.peak_gib:.2f} GiB less the CUDA context; {plan.verdict().split(':')[0]}",
        fix=fix,
    )
    return [timed, held]
