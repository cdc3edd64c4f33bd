"""Hyper-parameters of MCTS + step-level DPO (Agent Q, Putta et al. 2024, arXiv 2408.07199).

The run's typed search settings: resolved into ``RunConfig.mcts`` by the trainer and carried by
every search job on Redis (``SearchJob.mcts``), so the worker runs exactly the run's search. The
fields are the ``mcts`` section of the run's knobs (``halo.schemas.knobs``: each one's default and
its source); the paper leaves alpha, theta and beta unreported (docs/mcts.md has the table).
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, create_model

from halo.schemas import knobs
from halo.schemas.choices import Critic, Reference


class _SearchSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def critic_api_key(self) -> str:
        """The openai critic's key from this process's environment ("" when unset)."""
        return os.environ.get(self.critic_api_key_env, "").strip()


MCTSConfig = create_model(
    "MCTSConfig", __base__=_SearchSettings, __module__=__name__, **knobs.fields(knobs.in_section("mcts"), how="default")
)

__all__ = ["Critic", "MCTSConfig", "Reference"]
