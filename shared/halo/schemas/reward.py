"""Reward service messages: one transition in, a reward breakdown out."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from halo.schemas.actions import Action, ActionParseError
from halo.schemas.base import Message, WireBool, WireInt, WireJson, WireText
from halo.schemas.env import TaskId

Id = Annotated[str, Field(min_length=1, max_length=120, pattern=r"^[A-Za-z0-9_\-.:]+$")]


class StateSummary(Message):
    """What the reward service needs of an observation: never the screenshot itself."""

    url: Annotated[str, Field(max_length=4096)]
    axtree: Annotated[str, Field(max_length=400_000)] = ""
    # The site's state as /finish renders it (`initialfinaldiff`, `differences`, and for our
    # clones `state` with `progress` milestones). None for sites that expose nothing.
    site_state: WireJson | None = None
    screenshot_sha256: str | None = None


class RewardRequest(Message):
    transition_id: Id  # idempotency key: the same id is paid once, and answered the same
    run_id: Id
    episode_id: Id
    task_id: TaskId
    domain: Annotated[str, Field(min_length=1, max_length=40)]
    goal: Annotated[WireText, Field(max_length=4000)] = ""
    step: Annotated[WireInt, Field(ge=0, le=10_000)]
    prev: StateSummary
    next: StateSummary
    action: Action | None = None
    parse_error: ActionParseError | None = None
    terminated: WireBool = False
    truncated: WireBool = False
    task_success: WireBool | None = None  # the environment's validated verdict when the episode ended
    infra_error: WireBool = False  # browser crash / timeout: no reward, flagged for the trainer
    # The environment's `last_action_error` when the page could not take a well-formed action
    # (agent's fault, e.g. unknown element id): scored like an invalid action.
    action_error: Annotated[str, Field(max_length=2000)] | None = None
    # Transitions sharing a group_id are compared to each other (the service reports
    # `frac_reward_zero_std` over the groups it has seen).
    group_id: Id | None = None
    # The transition this one continues from. Forks of one state share the parent, so siblings
    # are scored against the same episode memory; None continues from the episode's latest.
    parent_transition_id: Id | None = None


class RewardBreakdown(Message):
    transition_id: Id
    milestones: list[str] = Field(default_factory=list)  # milestones newly reached by this step
    progress: float = 0.0  # milestone weights (or potential difference when shaping=potential)
    validity: float = 0.0  # +valid / -invalid action
    novelty: float = 0.0  # new state reached this episode
    loop_penalty: float = 0.0  # repeated action or state loop
    step_cost: float = 0.0
    success_bonus: float = 0.0
    total: float = 0.0
    infra_error: bool = False  # when true, total is 0 and the trainer must drop the transition
    duplicate: bool = False  # this transition id was already paid; the stored answer is returned
