"""Hand-built transitions for the reward tests."""

from __future__ import annotations

import uuid
from typing import Any

from halo.schemas import Action, ActionParseError, RewardRequest, StateSummary


def state(
    url: str = "http://sites/gomail/",
    progress: dict[str, bool] | None = None,
    extra: dict[str, Any] | None = None,
    axtree: str = "",
    exposed: bool = True,
) -> StateSummary:
    """A state summary; ``exposed=False`` is a site that shows no state (hosted REAL mid-episode),
    ``progress=None`` a state without progress markers (hosted REAL's /finish)."""
    site_state = None
    if exposed:
        site_state = {"initialfinaldiff": {"added": {}, "updated": {}, "deleted": {}}, "differences": {}}
        if progress is not None:  # our clones keep progress markers; hosted REAL states have none
            site_state["progress"] = dict(progress)
        site_state.update(extra or {})
    return StateSummary(url=url, axtree=axtree, site_state=site_state)


def click(x: int = 500, y: int = 500) -> Action:
    return Action(action="left_click", coordinate=(x, y))


def request(
    prev: StateSummary,
    nxt: StateSummary,
    *,
    domain: str = "gomail",
    step: int = 0,
    action: Action | None = None,
    parse_error: ActionParseError | None = None,
    episode_id: str = "ep-1",
    run_id: str = "run-1",
    **kwargs: Any,
) -> RewardRequest:
    if action is None and parse_error is None and not kwargs.get("infra_error"):
        action = click()
    return RewardRequest(
        transition_id=kwargs.pop("transition_id", f"t-{uuid.uuid4().hex[:10]}"),
        run_id=run_id,
        episode_id=episode_id,
        task_id=kwargs.pop("task_id", f"local.{domain}-1"),
        domain=domain,
        step=step,
        prev=prev,
        next=nxt,
        action=action,
        parse_error=parse_error,
        **kwargs,
    )
