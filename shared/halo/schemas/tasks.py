"""Tasks in agisdk's v2 JSON schema (what the REAL registry ships and our clones add to)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from halo.schemas.base import Message


class Website(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    name: str = ""
    similarTo: str = ""
    url: str  # absolute for hosted REAL sites; relative to the clone server for local clones


class Task(BaseModel):
    """One task. Field names follow agisdk's v2 JSON, so a REAL task file loads unchanged."""

    model_config = ConfigDict(extra="allow")

    id: str
    goal: str
    website: Website
    difficulty: Literal["easy", "medium", "hard"] | str = "easy"
    challengeType: str = "action"
    possible: bool = True
    evals: list[dict[str, Any]] = Field(default_factory=list)
    points: float = 1.0
    version: str = "v2"
    config: dict[str, Any] = Field(default_factory=dict)

    @property
    def domain(self) -> str:
        """The site id, e.g. ``gomail`` for ``v2.gomail-3`` or ``local.gomail-3``."""
        return self.website.id


class TaskReachability(Message):
    """Whether a task's site answers from the env service (``GET /tasks/reachability``).

    Probed once per origin: every task on an unreachable origin carries that origin's ``reason``.
    """

    task_id: str
    backend: str
    origin: str
    reachable: bool
    reason: str = ""


class LeftOutTask(Message):
    """A REAL v2 task that does not run offline, and why (``GET /tasks/left-out``)."""

    task_id: str  # REAL's own id, e.g. ``v2.omnizon-28``
    site: str
    reason: str
