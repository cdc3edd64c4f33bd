"""Environment service messages: sessions, observations, steps, forks (Gymnasium/BrowserGym style)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from halo.schemas.actions import Action
from halo.schemas.base import Message, WireInt, WireJson, WireText

SessionId = Annotated[str, Field(min_length=8, max_length=80, pattern=r"^[A-Za-z0-9_\-]+$")]
TaskId = Annotated[str, Field(min_length=1, max_length=120, pattern=r"^[A-Za-z0-9_\-.]+$")]
LeaseId = Annotated[str, Field(min_length=8, max_length=80, pattern=r"^[A-Za-z0-9_\-]+$")]


class Viewport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    width: Annotated[int, Field(ge=64, le=4096)] = 1280
    height: Annotated[int, Field(ge=64, le=4096)] = 720


class ScreenshotRef(BaseModel):
    """A PNG stored once under its content hash; fetch it with ``GET /screenshots/{sha256}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    width: int
    height: int
    url: str | None = None  # absolute URL on the store that holds it, when known


class ErrorKind(StrEnum):
    """Who is to blame for a failed action. The trainer drops ``infra`` transitions, never scores them."""

    AGENT = "agent"  # the page could not take the action (off-screen, unknown element, bad key)
    INFRA = "infra"  # browser crash, navigation/evaluate timeout, service failure


class Observation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: SessionId
    task_id: TaskId
    goal: str
    step: Annotated[int, Field(ge=0)]
    url: str
    title: str = ""
    screenshot: ScreenshotRef
    axtree: str = ""  # accessibility tree as text, one node a line: `[bid] role "name"`
    last_action_error: str | None = None
    last_action_error_kind: ErrorKind | None = None
    answer: str | None = None  # set once the agent used the `answer` action
    # For local clones: the same JSON their /finish page renders (initialfinaldiff, differences,
    # progress milestones), read in-page through `window.__HALO__.finish()` without navigating.
    # None for sites that do not expose their state (hosted REAL sites mid-episode).
    site_state: dict[str, Any] | None = None
    # Requests and navigations the network allowlist refused since the previous observation.
    blocked_requests: list[str] = Field(default_factory=list)
    terminated: bool = False  # the agent ended the episode (terminate/answer) or the task ended it
    truncated: bool = False  # max steps reached


class CreateSessionRequest(Message):
    task_id: TaskId
    seed: Annotated[WireInt, Field(ge=0, le=2**31 - 1)] = 0
    max_steps: Annotated[WireInt, Field(ge=1, le=500)] = 30
    run_id: Annotated[str, Field(max_length=80, pattern=r"^[A-Za-z0-9_\-.]*$")] = ""
    # The owner's lease (``POST /leases``): the session, and every fork of it, is closed when the
    # lease's heartbeat stops. None: the session lives until closed or idle for the env's TTL.
    lease_id: LeaseId | None = None


class CreateLeaseRequest(Message):
    """Ask for a session lease. ``owner`` only labels it in logs and ``GET /leases``."""

    owner: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_\-.:@]+$")]


class LeaseInfo(Message):
    """A session lease: renew it (``POST /leases/{lease_id}/heartbeat``) more often than every
    ``ttl_s`` seconds, or the env closes every session created under it."""

    lease_id: LeaseId
    owner: str
    ttl_s: float
    sessions: int  # sessions open under the lease now
    created_at: float  # unix time
    renewed_at: float  # unix time of the last heartbeat (or of the creation)


class LeaseReleased(Message):
    lease_id: LeaseId
    sessions_closed: int


class StepRequest(Message):
    action: Action


class ForkMethod(StrEnum):
    REWIND = "rewind"  # browser state written into a page already showing the clone's app (no page load)
    SNAPSHOT = "snapshot"  # browser state (cookies, storage, URL) copied into fresh contexts
    REPLAY = "replay"  # action prefix replayed after a reset (sites whose state is server-side)


class ForkRequest(Message):
    n: Annotated[WireInt, Field(ge=1, le=32)]
    # None: the fastest the backend allows (rewind where a warm page waits, else snapshot; replay
    # for replay backends). "snapshot" refuses the rewind path; "rewind" is the default's preference.
    method: ForkMethod | None = None


class SessionInfo(Message):
    session_id: SessionId
    task_id: TaskId
    step: int
    created_at: float
    last_used_at: float
    terminated: bool
    truncated: bool
    lease_id: LeaseId | None = None


class ResetResponse(Message):
    observation: Observation
    info: dict[str, Any] = Field(default_factory=dict)


class StepResponse(Message):
    """``step(action) -> (obs, reward, terminated, truncated, info)``.

    ``reward`` is the task's own sparse score (1.0 on validated success, else 0.0); dense shaping is
    the reward service's job. ``info`` carries ``task_success`` (bool or None when not evaluable)
    and ``finish_state`` (the site's /finish JSON) once an episode ends, when available.
    """

    observation: Observation
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


class ForkResponse(Message):
    parent_id: SessionId
    method: ForkMethod
    sessions: list[ResetResponse]


class Snapshot(Message):
    """Everything needed to recreate a session's browser state in a fresh context."""

    task_id: TaskId
    url: WireText  # the restored page loads it
    step: Annotated[WireInt, Field(ge=0)]
    storage_state: WireJson  # Playwright storage_state: cookies + localStorage per origin
    session_storage: dict[str, dict[str, str]] = Field(default_factory=dict)  # origin -> items
    actions: list[Action] = Field(default_factory=list)  # prefix, for replay forks
    answer: WireText | None = None


class ValidationResult(Message):
    """A task's verdict. ``success`` is None when the task cannot be evaluated here (e.g. an
    llm_boolean eval without an OpenAI key): never reported as failure."""

    task_id: TaskId
    success: bool | None
    reward: float
    details: list[str] = Field(default_factory=list)
    finish_state: dict[str, Any] | None = None


class ErrorResponse(BaseModel):
    """Body of every 4xx/5xx answer from a HALO service."""

    error: str
    detail: Any = None
    kind: Literal["client", "infra", "not_found", "conflict", "auth"] = "client"
