"""Rollout messages on Redis: jobs to workers, transitions to the learner, policy versions."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, create_model
from pydantic_core import PydanticCustomError

from halo.schemas import knobs
from halo.schemas.actions import Action, ActionParseError
from halo.schemas.base import Message
from halo.schemas.choices import BranchPolicy, GroupMode, StructuredMode  # noqa: F401 (the messages' home)
from halo.schemas.reward import Id, RewardBreakdown
from halo.schemas.search_settings import MCTSConfig


class PolicyVersion(Message):
    run_id: Id
    version: Annotated[int, Field(ge=0)]  # 0 = the base model, no adapter
    adapter_name: str  # `<run>-v<k>`, or the served base model name for version 0
    adapter_path: str | None = None
    created_at: float


class _Sampling(Message):
    """How the policy is asked for actions: part of the run's config, carried by every job and transition.

    The learner rebuilds each prompt (goal, history cut to ``history_limit``, the tool described
    for ``viewport``) and replays the structured-output grammar from these values alone, so what
    it trains on is what vLLM sampled, whichever client or process did the sampling. The fields
    are the run's ``sampling`` knobs (``halo.schemas.knobs``), all required: a message says how it
    was sampled, it never falls back on a default. A knob added later takes its ``before`` value
    in a message written before it existed (``describe_tools``: true), which is how that one was sampled.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


SamplingParams = create_model(
    "SamplingParams",
    __base__=_Sampling,
    __module__=__name__,
    **knobs.fields(knobs.in_section("sampling"), how="resolved"),
)


# -- jobs: what a worker is asked to play -----------------------------------------------------------
# Four kinds, told apart by ``kind`` (a discriminated union): what each kind needs is a required
# field of its class, and what it must not vary is refused when the message is built or parsed.

JobKind = Literal["train_step_group", "train_episode_group", "search", "eval"]
JobPurpose = Literal["train", "eval", "search"]  # what its results say they are (RolloutResult.purpose)


class JobBase(Message):
    """What every job carries: which task and seed, the policy, and how the policy is sampled."""

    job_id: Id
    run_id: Id
    kind: JobKind
    task_id: Id
    group_id: Id
    # A train or search job's policy when it was published (each sample reads the run's current
    # version); an eval job's is the one version every sample of it uses.
    policy: PolicyVersion
    temperature: Annotated[float, Field(ge=0.0, le=2.0)]
    seed: Annotated[int, Field(ge=0)]
    max_steps: Annotated[int, Field(ge=1, le=200)]
    sampling: SamplingParams
    # The policy's sampling draws derive from this (None: from ``seed``); jobs given one value
    # draw the same random numbers whatever their task's seed (the knob common_random_numbers).
    sampling_seed: Annotated[int, Field(ge=0)] | None = None

    purpose: ClassVar[JobPurpose]


class StepGroupJob(JobBase):
    """Training: one episode that samples ``group_size`` actions at every state and plays each in
    its own fork of that state (a group of one has nothing to fork: it plays one plain episode)."""

    kind: Literal["train_step_group"] = "train_step_group"
    group_size: Annotated[int, Field(ge=1, le=32)]
    branch: BranchPolicy = BranchPolicy.SAMPLED  # which fork the episode continues from

    purpose: ClassVar[JobPurpose] = "train"


class EpisodeGroupJob(JobBase):
    """Training: ``group_size`` full episodes of the task and seed, compared by their returns."""

    kind: Literal["train_episode_group"] = "train_episode_group"
    group_size: Annotated[int, Field(ge=1, le=32)]

    purpose: ClassVar[JobPurpose] = "train"


class SearchJob(JobBase):
    """One MCTS search of the task (halo_trainer.mcts) with the run's search settings."""

    kind: Literal["search"] = "search"
    mcts: MCTSConfig

    purpose: ClassVar[JobPurpose] = "search"


def _greedy(value: float) -> float:
    if value != 0.0:
        raise PydanticCustomError(
            "eval_temperature", "an eval job is greedy: temperature must be 0, not {value}", {"value": value}
        )
    return value


def _one_episode(value: int) -> int:
    if value != 1:
        raise PydanticCustomError(
            "eval_group_size", "an eval job plays one episode: group_size must be 1, not {value}", {"value": value}
        )
    return value


class EvalJob(JobBase):
    """Evaluation: one greedy episode with the job's own policy version (never the run's current one)."""

    kind: Literal["eval"] = "eval"
    temperature: Annotated[float, AfterValidator(_greedy)] = 0.0
    group_size: Annotated[int, AfterValidator(_one_episode)] = 1

    purpose: ClassVar[JobPurpose] = "eval"


# The job stream's message: one of the four kinds, picked by ``kind``. Validate with ``JOB_ADAPTER`` (or
# any TypeAdapter of it); a message without a known ``kind`` is refused, naming the field.
RolloutJob = Annotated[StepGroupJob | EpisodeGroupJob | SearchJob | EvalJob, Field(discriminator="kind")]
JOB_ADAPTER: TypeAdapter[RolloutJob] = TypeAdapter(RolloutJob)


class PromptRecord(Message):
    """Enough to rebuild the exact model input: the learner re-renders it and checks the ids."""

    goal: str
    history: list[str] = Field(default_factory=list)  # previous actions, oldest first
    screenshot_sha256: str
    prompt_token_ids: list[int]
    # The policy replica that answered it (its candidates, token ids and log-probs); None: the one
    # server at the trainer's policy_url. A run over replicas can tell from it where each sample came from.
    replica: str | None = None


class Transition(Message):
    transition_id: Id
    run_id: Id
    job_id: Id
    episode_id: Id
    group_id: Id  # transitions sharing a group_id are compared to each other (advantage)
    task_id: Id
    step: Annotated[int, Field(ge=0)]
    policy_version: Annotated[int, Field(ge=0)]
    prompt: PromptRecord
    completion_text: str
    completion_token_ids: list[int]
    behaviour_logprobs: list[float]  # per completion token, from vLLM at sampling time
    sampling: SamplingParams  # how it was sampled: the learner rebuilds prompt and grammar mask from it
    action: Action | None = None
    parse_error: ActionParseError | None = None
    reward: RewardBreakdown
    terminated: bool = False
    truncated: bool = False
    task_success: bool | None = None
    infra_error: bool = False
    episode_return: float | None = None  # episode groups: the return this transition is credited
    # The page after this candidate's action (None when nothing ran): a step group's forks other than
    # the kept one are closed after the step, so this hash is the only trace of where they led.
    next_screenshot_sha256: str | None = None


class EpisodeSummary(Message):
    """One finished episode (published for metrics and filmstrips)."""

    run_id: Id
    job_id: Id
    episode_id: Id
    group_id: Id
    task_id: Id
    policy_version: int
    purpose: Literal["train", "eval"] = "train"
    steps: int
    episode_return: float
    success: bool | None
    valid_actions: int
    infra_error: bool = False
    actions: list[str] = Field(default_factory=list)
    screenshots: list[str] = Field(default_factory=list)  # sha256 per step, for filmstrips


class SearchOutcome(Message):
    """What a search job produced: its tree file (under the run folder) and the search's summary."""

    tree_file: str
    metrics: dict[str, float] = Field(default_factory=dict)


class RolloutResult(Message):
    """Everything one rollout job produced, published as one entry of the run's results stream.

    One entry per job keeps a group's transitions together (the learner needs all of a group to
    compute its advantages) and lets the learner acknowledge a job's data as one unit.
    """

    job_id: Id
    run_id: Id
    purpose: Literal["train", "eval", "search"] = "train"
    policy_version: Annotated[int, Field(ge=0)]
    search: SearchOutcome | None = None  # a search job's tree and summary
    transitions: list[Transition] = Field(default_factory=list)
    episodes: list[EpisodeSummary] = Field(default_factory=list)
    infra_error: str | None = None  # the job failed for infrastructure reasons; nothing to learn from
    elapsed_s: float = 0.0
