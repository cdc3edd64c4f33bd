"""Trainer run API messages."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, create_model, field_validator, model_validator

from halo.schemas import knobs
from halo.schemas.base import Message
from halo.schemas.choices import Algorithm, section_owner, split_loss_type
from halo.schemas.tasks import TaskReachability

# RunSpec fields that only the mcts algorithm reads (MCTSConfig's)
# A request knob of a section one algorithm owns -> that algorithm (``ALGORITHMS[...].own_section``).
OWNED_FIELDS = {k.name: owner for k in knobs.KNOBS if k.request and (owner := section_owner(k.section)) is not None}


class _RunRequest(Message):
    """What a user asks for with ``POST /runs``: a site, the tasks, the algorithm, and any knob
    (``halo.schemas.knobs``) a request may set; unset knobs come from configs/rl_config.yaml."""

    domain: Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[a-z0-9_\-]+$")]
    tasks: list[Annotated[str, Field(max_length=120)]] | None = None  # default: the domain's train tasks
    algorithm: Algorithm = Algorithm.GRPO
    name: Annotated[str, Field(max_length=40, pattern=r"^[a-z0-9_\-]*$")] = ""

    @model_validator(mode="after")
    def _owned_fields_need_their_algorithm(self) -> _RunRequest:
        foreign: dict[Algorithm, list[str]] = {}
        for name, owner in OWNED_FIELDS.items():
            if getattr(self, name) is not None and owner != self.algorithm:
                foreign.setdefault(owner, []).append(name)
        for owner, given in foreign.items():
            raise ValueError(f"{', '.join(given)}: settings of algorithm {owner.value!r}, not {self.algorithm.value!r}")
        return self

    def knob_values(self) -> dict[str, Any]:
        """The knobs this request sets (those not None), by name."""
        return {k.name: getattr(self, k.name) for k in knobs.KNOBS if k.request and getattr(self, k.name) is not None}


RunSpec = create_model(
    "RunSpec",
    __base__=_RunRequest,
    __module__=__name__,
    **knobs.fields([k for k in knobs.KNOBS if k.request], how="optional"),
)


class RunState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FINISHED = "finished"
    FAILED = "failed"


class RunPhase(Message):
    """What a running run is doing now, so that a progress line can name it (``halo train``, the viewer).

    A run spends minutes outside its updates (the baseline evaluation, one every ``eval_every``
    updates, loading an adapter into vLLM, waiting out an outage); without this a progress bar sits
    still through them. ``done``/``total`` count the phase's own work where it has any (an
    evaluation's episodes, an update's jobs); ``note`` says why a phase takes longer than it should
    (vLLM not ready, a job reclaimed after its timeout), set by the loop that knows.
    """

    kind: Literal["starting", "collecting", "updating", "publishing", "evaluating", "checkpointing"]
    label: Annotated[str, Field(max_length=200)]  # "evaluating v10", "collecting update 3"
    done: int = 0
    total: int | None = None
    unit: str = ""  # what done/total count: "episodes", "jobs"
    started_at: float  # wall clock (time.time()) when the phase began
    note: Annotated[str, Field(max_length=500)] | None = None


class RunStatus(Message):
    run_id: str
    state: RunState
    spec: RunSpec
    created_at: float
    updated_at: float
    episodes_done: int = 0
    episodes_total: int = 0
    updates: int = 0
    policy_version: int = 0
    adapter_name: str | None = None
    latest_metrics: dict[str, float] = Field(default_factory=dict)
    error: str | None = None
    run_dir: str | None = None
    # The default task set keeps only tasks whose site answered when the run was created.
    tasks_left_out: list[TaskReachability] = Field(default_factory=list)
    task_set_note: str | None = None  # one line on what was left out (or named but unreachable), and why
    phase: RunPhase | None = None  # while running: what the loop is doing now (None before it starts and once it ends)

    @field_validator("spec", mode="before")
    @classmethod
    def _stored_spec(cls, value: Any) -> Any:
        # A run stored before a knob was renamed: its request reads back under the knob's one name.
        if isinstance(value, dict):
            value = split_loss_type(value)
        if isinstance(value, dict) and "searches_per_iteration" in value:
            value = dict(value)
            given = value.pop("searches_per_iteration")
            if given is not None:
                value["jobs_per_update"] = given
        return value

    @field_validator("latest_metrics", mode="before")
    @classmethod
    def _unmeasured_metrics_read_back(cls, value: Any) -> Any:
        # JSON has no NaN: a metric not measured at an update is written as null (pydantic's
        # default), so a stored or served status must read null back as NaN, not fail.
        if isinstance(value, dict):
            return {k: float("nan") if v is None else v for k, v in value.items()}
        return value


class RunEvent(Message):
    """One server-sent event of ``GET /runs/{id}/events``."""

    run_id: str
    kind: Literal["status", "phase", "metrics", "log", "done"]  # phase: RunStatus.phase alone
    data: dict[str, Any]
