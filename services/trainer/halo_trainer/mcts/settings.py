"""The MCTS + step-level DPO settings. They cross Redis on every search job, so they live in the
schema package (``halo.schemas.search_settings``); the trainer's modules import them from here."""

from __future__ import annotations

from halo.schemas.choices import RolloutNodes, Selection
from halo.schemas.search_settings import Critic, MCTSConfig, Reference

__all__ = ["Critic", "MCTSConfig", "Reference", "RolloutNodes", "Selection"]
