"""What the run manager needs of an algorithm's loop (``halo_trainer.loops.LOOPS`` holds one per algorithm)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from halo_trainer.config import RunConfig
from halo_trainer.loop_parts.parts import LoopStatus


class Loop(Protocol):
    """One run of one algorithm, built from ``RunParts`` (``halo_trainer.grpo.loop`` is the shortest example).

    ``services`` are the keyword arguments ``RunParts`` takes besides the algorithm's own (redis,
    policy, learner, processor, store, run_dir, settings, status_cb, trackers, phase_cb).
    """

    cfg: RunConfig

    def __init__(self, cfg: RunConfig, **services: Any) -> None: ...

    async def run(self, stop: asyncio.Event) -> str:
        """Train until the episode budget is spent ("finished") or ``stop`` is set ("stopped")."""
        ...

    def status(self) -> LoopStatus: ...

    async def release_weights(self) -> None:
        """Give vLLM its base weights back after a full-weights run (``PolicyPublisher.release``)."""
        ...
