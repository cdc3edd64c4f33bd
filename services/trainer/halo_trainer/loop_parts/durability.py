"""Checkpoint, acknowledge, restore: what makes a run survive ``kill -9`` with every result used once.

Results are acknowledged only after the checkpoint that includes their update is committed, so a
`kill -9` at any point replays exactly the results whose effect was lost, and no result is used
twice in the final weights: the results queue acknowledges them and marks their job ids done in
one transaction (``StreamQueue.ack_many``), and a result whose job is marked done is a duplicate.
Results of jobs that failed on infrastructure are acknowledged at the same moment, so a job's fate
(used, replaced, or still in flight) is always the one the last checkpoint recorded.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Any

from halo_trainer.learner.checkpoint import CheckpointManager
from halo_trainer.learner.ranks import Leader
from halo_trainer.loop_parts.pipeline import JobPipeline
from halo_trainer.loop_parts.state import Counters

logger = logging.getLogger("halo.trainer.loop")


class Durability:
    def __init__(
        self,
        *,
        checkpoints: CheckpointManager,
        learner: Leader,
        config: dict[str, Any],
        counters: Counters,
        pipeline: JobPipeline,
    ) -> None:
        self.checkpoints, self.learner, self.config = checkpoints, learner, config
        self.c, self.pipeline = counters, pipeline
        self._saved: dict[str, Any] | None = None  # the counters of the last checkpoint this loop wrote

    async def checkpoint(self) -> None:
        """Commit weights + counters, then acknowledge the results they include (in that order).

        Nothing is written when nothing changed since this loop's last checkpoint (the final one
        right after an update's): the weights only change with an update, which the counters count,
        and every result or failure the counters record was acknowledged with that checkpoint."""
        extra = asdict(self.c)  # results buffered but not yet used stay unacknowledged: replayed on resume
        if extra == self._saved:
            return
        await asyncio.to_thread(self.learner.checkpoint, self.checkpoints, config=self.config, extra=extra)
        await self.pipeline.ack_pending()
        self._saved = asdict(self.c)  # as acknowledged: what an unchanged run looks like next time

    async def restore(self, run_id: str) -> None:
        """The last checkpoint's weights and counters, then the results it had not acknowledged."""
        checkpoint = await asyncio.to_thread(self.learner.resume, self.checkpoints)
        if checkpoint is not None:
            self.c.restore(checkpoint.extra)
        await self.pipeline.ack_pending()  # the checkpoint was committed, its acknowledgement may not have been
        # Results delivered to the dead learner but not acknowledged come back, before new ones
        # (also when it died before its first checkpoint: their jobs are done and will not rerun).
        replayed = await self.pipeline.replay_unacked()
        if checkpoint is None and not replayed:
            return
        logger.info(
            "resumed run %s at update %d (v%d, %d episodes, %d results replayed)",
            run_id,
            self.c.updates,
            self.c.version,
            self.c.episodes_done,
            replayed,
        )
