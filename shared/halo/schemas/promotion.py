"""Promotion through the run API (``POST /runs/{run_id}/promote``): a run's adapter version copied
to its agent mode's folder, by the same ``halo.modes.promote_run`` that ``halo modes promote`` calls."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from halo.schemas.base import Message, WireInt, WireText


class PromoteRequest(Message):
    """Which adapter version of the run, to which mode; both optional."""

    # None: the run's newest adapter version (what `halo modes promote --run` takes without --version).
    version: Annotated[WireInt, Field(ge=0)] | None = None
    # None: the mode of the run's algorithm (qwen3vl_grpo for grpo, qwen3vl_mcts for mcts).
    mode: Annotated[WireText, Field(min_length=1, max_length=64)] | None = None


class PromoteResponse(Message):
    mode: str
    run_id: str
    version: int
    target: str  # the mode's adapter folder, now holding the copy and its promotion.json
    source: str  # the run's adapters/v<k> folder it was copied from
    sha256: str  # of the adapter's config and weights
    served_as: str  # the name evaluations load it into vLLM under (<mode>-<first 12 hex of sha256>)
