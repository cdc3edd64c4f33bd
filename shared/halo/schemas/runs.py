"""Trainer run API messages."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from halo.schemas.base import Message, WireFloat, WireInt
from halo.schemas.rollout import BranchPolicy, GroupMode
from halo.schemas.tasks import TaskReachability


class Algorithm(StrEnum):
    GRPO = "grpo"
    MCTS = "mcts"


class LossType(StrEnum):
    DR_GRPO = "dr_grpo"  # A = r - mean(r); token loss normalised by a constant
    GRPO = "grpo"  # A = (r - mean(r)) / (std(r) + eps); per-sequence length normalisation


# Experiment trackers a run reports to (``none`` alone: only the run folder's own files).
TrackerName = Literal["none", "tensorboard", "wandb", "trackio", "mlflow"]


# Where a run's LoRA adapter reaches (halo_model.lora says which modules each one covers); the
# vision side is applied only by a server started with tower LoRA (HALO_POLICY_TOWER_LORA).
LoraTarget = Literal["language", "language+merger", "language+tower"]


# Named sets of base-model modules a run trains in full beside the LoRA adapter (``full_weights``);
# halo_model.full_weights says which parameters each one covers.
FULL_WEIGHT_PRESETS = ("vision_merger", "vision_last_blocks", "vision", "all")
_MODULE_NAME = re.compile(r"^(model|lm_head)(\.[A-Za-z0-9_]+)*$")


def check_full_weights(names: list[str]) -> list[str]:
    """``full_weights`` entries are presets or module names of the HF model; duplicates dropped."""
    bad = [n for n in names if n not in FULL_WEIGHT_PRESETS and not _MODULE_NAME.match(n)]
    if bad:
        raise ValueError(
            f"full_weights {bad}: neither a preset ({', '.join(FULL_WEIGHT_PRESETS)}) nor a module name of the "
            "Hugging Face model (e.g. model.visual.merger, model.visual.blocks.26, lm_head)"
        )
    return list(dict.fromkeys(names))


# RunSpec fields that only the mcts algorithm reads (halo_trainer.mcts.settings.MCTSConfig's)
MCTS_FIELDS = (
    "simulations",
    "ucb_c",
    "max_children",
    "max_depth",
    "alpha",
    "theta",
    "beta",
    "critic",
    "reference",
    "rpo_alpha",
)


class RunSpec(Message):
    """What a user asks for with ``POST /runs`` (unset fields come from configs/rl_config.yaml)."""

    domain: Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[a-z0-9_\-]+$")]
    tasks: list[Annotated[str, Field(max_length=120)]] | None = None  # default: the domain's train tasks
    algorithm: Algorithm = Algorithm.GRPO
    episodes: Annotated[WireInt, Field(ge=1, le=1_000_000)] = 100
    num_generations: Annotated[WireInt, Field(ge=2, le=32)] | None = None
    learning_rate: Annotated[WireFloat, Field(gt=0, le=1.0)] | None = None
    loss_type: LossType | None = None
    group_mode: GroupMode | None = None
    branch: BranchPolicy | None = None
    # Sampling temperature of training rollouts, also the temperature the learner scores at; > 0
    # (vLLM samples greedily below 1e-5, and a greedy sample's log-probs are not the tempered ones).
    temperature: Annotated[WireFloat, Field(ge=0.01, le=2.0)] | None = None
    # Truncated importance sampling: the cap on each token's weight pi_learner / pi_vLLM (docs/trainer.md)
    tis_cap: Annotated[WireFloat, Field(ge=1.0, le=100.0)] | None = None
    # Warn (and count) when train/behaviour_logprob_gap, nats per token, passes this
    behaviour_gap_alarm: Annotated[WireFloat, Field(gt=0.0, le=10.0)] | None = None
    max_steps: Annotated[WireInt, Field(ge=1, le=200)] | None = None
    eval_every: Annotated[WireInt, Field(ge=0)] | None = None  # updates between evaluations; 0 = never
    eval_episodes: Annotated[WireInt, Field(ge=0, le=10_000)] | None = None
    seed: Annotated[WireInt, Field(ge=0, le=2**31 - 1)] = 0
    report_to: Annotated[list[TrackerName], Field(max_length=5)] | None = None
    # Where the LoRA adapter reaches: language, language+merger, language+tower (docs/trainer.md)
    lora_target: LoraTarget | None = None
    # Base-model modules trained in full beside the LoRA adapter (presets or HF module names; [] = LoRA only)
    full_weights: Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=64)] | None = None
    full_weights_lr: Annotated[WireFloat, Field(gt=0, le=1.0)] | None = None  # AdamW rate of those parameters
    # algorithm "mcts" only (unset: configs/rl_config.yaml's mcts section; docs/mcts.md has each one)
    searches_per_iteration: Annotated[WireInt, Field(ge=1, le=1024)] | None = None  # searches per DPO iteration
    simulations: Annotated[WireInt, Field(ge=1, le=10_000)] | None = None
    ucb_c: Annotated[WireFloat, Field(ge=0.0, le=100.0)] | None = None
    max_children: Annotated[WireInt, Field(ge=2, le=32)] | None = None
    max_depth: Annotated[WireInt, Field(ge=1, le=200)] | None = None
    alpha: Annotated[WireFloat, Field(ge=0.0, le=1.0)] | None = None
    theta: Annotated[WireFloat, Field(ge=0.0)] | None = None
    beta: Annotated[WireFloat, Field(gt=0.0, le=10.0)] | None = None
    critic: Literal["self", "openai", "progress"] | None = None
    reference: Literal["base", "iteration"] | None = None
    rpo_alpha: Annotated[WireFloat, Field(ge=0.0)] | None = None
    name: Annotated[str, Field(max_length=40, pattern=r"^[a-z0-9_\-]*$")] = ""

    @field_validator("report_to")
    @classmethod
    def _none_alone(cls, names: list[str] | None) -> list[str] | None:
        if names and "none" in names and len(names) > 1:
            raise ValueError("report_to: 'none' cannot be combined with a tracker")
        return names

    @field_validator("full_weights")
    @classmethod
    def _full_weight_names(cls, names: list[str] | None) -> list[str] | None:
        return None if names is None else check_full_weights(names)

    @model_validator(mode="after")
    def _mcts_fields_need_mcts(self) -> RunSpec:
        given = [k for k in (*MCTS_FIELDS, "searches_per_iteration") if getattr(self, k) is not None]
        if given and self.algorithm is not Algorithm.MCTS:
            raise ValueError(f"{', '.join(given)}: settings of algorithm 'mcts', not {self.algorithm.value!r}")
        return self

    def mcts_overrides(self) -> dict[str, Any]:
        """The search and DPO settings this request sets (the MCTS fields that are not None)."""
        return {k: getattr(self, k) for k in MCTS_FIELDS if getattr(self, k) is not None}


class RunState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FINISHED = "finished"
    FAILED = "failed"


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
    kind: Literal["status", "metrics", "log", "done"]
    data: dict[str, Any]
