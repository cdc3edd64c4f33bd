"""Every run algorithm's loop by the algorithm a run names: the run manager picks from this table.

A new algorithm is one ``halo.schemas.Algorithm`` member (with its title beside it), one loop
class that fits ``loop_parts.loop.Loop``, and one entry here (docs/trainer.md, "A new algorithm").
Importing this module imports torch: the run manager loads it when a run starts.
"""

from __future__ import annotations

from halo.schemas import Algorithm
from halo_trainer.grpo.loop import GrpoLoop
from halo_trainer.loop_parts.loop import Loop
from halo_trainer.mcts.loop import MctsLoop

LOOPS: dict[Algorithm, type[Loop]] = {
    Algorithm.GRPO: GrpoLoop,
    Algorithm.MCTS: MctsLoop,
}
