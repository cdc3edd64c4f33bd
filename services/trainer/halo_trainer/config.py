"""A run's resolved configuration: configs/rl_config.yaml, then the profile, then the RunSpec.

The resolved ``RunConfig`` is logged, saved in the run folder (``config.json``) and in every
checkpoint, so a run can be reproduced from its folder alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from halo.schemas import Algorithm, BranchPolicy, GroupMode, LossType, RunSpec, SamplingParams, TrackerName
from halo.schemas.runs import LoraTarget, check_full_weights
from halo.settings import REPO_ROOT
from halo.settings.trainer import LearnerConfig
from halo_trainer.mcts.settings import MCTSConfig

EVAL_SEED_OFFSET = 1_000_000  # evaluation seeds never overlap training seeds


class RunConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    domain: str
    tasks: list[str]
    algorithm: Algorithm
    episodes: int = Field(description="Training episodes; a step-group job counts as one episode, a search as one")
    num_generations: int
    temperature: float = Field(
        gt=0.0, le=2.0, description="Sampling temperature of training rollouts; the learner scores at it too"
    )
    learning_rate: float
    loss_type: LossType
    kl_coef: float
    clip_eps: float
    epochs_per_batch: int
    jobs_per_update: int
    # Runs saved before this field resume as they ran: synchronously.
    prefetch_updates: int = Field(
        0, ge=0, description="Updates' worth of jobs kept in flight beyond the current one; 0 = synchronous"
    )
    max_grad_norm: float
    use_behaviour_logprobs: bool
    # Runs saved before these fields resume as they ran: no cap, no alarm.
    tis_cap: float | None = Field(
        None,
        ge=1.0,
        description="Truncated importance sampling: each token's weight pi_learner / pi_vLLM is capped here; "
        "None = no cap (the PPO ratio is then taken against vLLM's log-probs)",
    )
    behaviour_gap_alarm: float | None = Field(
        None,
        gt=0.0,
        description="train/behaviour_logprob_gap (nats per token) above which the trainer warns and counts; "
        "None = no alarm",
    )
    group_mode: GroupMode
    branch: BranchPolicy
    max_steps: int
    sync_every: int
    max_staleness: int
    eval_every: int
    eval_episodes: int
    checkpoint_every: int
    seed: int
    lora_r: int
    lora_alpha: float
    lora_target_modules: list[str]
    # Runs saved before this field resume as they ran: the language model only.
    lora_target: LoraTarget = Field(
        "language",
        description="Where the adapter reaches: language, language+merger (+ the vision merger and deepstack "
        "mergers), language+tower (+ the vision blocks); the vision side needs a server with tower LoRA",
    )
    # Runs saved before these fields resume as they ran: LoRA only.
    full_weights: list[str] = Field(
        default_factory=list,
        description="Base-model modules trained in full beside the adapter: presets or HF module names "
        "(halo_model.full_weights); [] = LoRA only",
    )
    full_weights_lr: float = Field(1e-7, gt=0, le=1.0, description="AdamW learning rate of the full-weight modules")
    sampling: SamplingParams = Field(description="How the policy is asked; every job and transition carries it")
    report_to: list[TrackerName] = Field(description="Experiment trackers the metrics also go to")
    record_episodes_every: int = Field(
        ge=0, description="Every k-th training job's episodes go to episodes.jsonl (evaluations always); 0 = none"
    )
    profile: str | None = None
    mcts: MCTSConfig | None = Field(None, description="Search and DPO settings; set exactly when algorithm is mcts")

    @field_validator("report_to")
    @classmethod
    def _trackers(cls, names: list[str]) -> list[str]:
        if "none" in names and len(names) > 1:
            raise ValueError(f"report_to {names}: 'none' cannot be combined with a tracker")
        return list(dict.fromkeys(n for n in names if n != "none"))

    @field_validator("full_weights")
    @classmethod
    def _full_weight_names(cls, names: list[str]) -> list[str]:
        return check_full_weights(names)

    @model_validator(mode="after")
    def _tis_needs_one_pass(self) -> RunConfig:
        if self.tis_cap is not None and self.epochs_per_batch > 1:
            # The truncated weight needs the learner's log-probs from before the first pass; the
            # learner keeps none, so a second pass would run without any trust region.
            raise ValueError(
                f"tis_cap={self.tis_cap} needs epochs_per_batch=1 (got {self.epochs_per_batch}): set tis_cap to "
                "null or make one pass per batch"
            )
        return self

    @field_validator("sampling")
    @classmethod
    def _replayable(cls, sampling: SamplingParams) -> SamplingParams:
        if sampling.structured_outputs == "json":
            # The learner replays regex grammars only; under an unreplayed JSON grammar its
            # log-probs would be over another distribution than the one vLLM sampled from.
            raise ValueError("structured_outputs=json cannot be replayed by the learner: use regex or off")
        return sampling

    def learner_config(self, base: LearnerConfig) -> LearnerConfig:
        return base.model_copy(
            update={
                "loss_type": self.loss_type,
                "learning_rate": self.learning_rate,
                "kl_coef": self.kl_coef,
                "clip_eps_low": self.clip_eps,
                "clip_eps_high": self.clip_eps,
                "max_grad_norm": self.max_grad_norm,
                "lora_r": self.lora_r,
                "lora_alpha": self.lora_alpha,
                "lora_target_modules": tuple(self.lora_target_modules),
                "lora_target": self.lora_target,
                "full_weights": tuple(self.full_weights),
                "full_weights_lr": self.full_weights_lr,
                # Dr. GRPO's constant normaliser is the sampler's completion budget.
                "max_completion_tokens": self.sampling.max_tokens,
                "tis_cap": self.tis_cap,
                # vLLM reports log-probs of what it sampled from: the learner scores at the same temperature.
                "temperature": self.temperature,
            }
        )


def resident_adapters(max_staleness: int) -> int:
    """Adapters the run loop keeps in vLLM at most: the versions rollouts may still use (current -
    max_staleness .. current, ``PolicyPublisher._retire``) plus the next one, which loads before
    the oldest is unloaded."""
    return max_staleness + 2


def profile_for(target: str) -> str | None:
    """The run profile a trainer target implies: ``tiny`` for the CPU target's random-weight model."""
    return "tiny" if target == "cpu" else None


def load_defaults(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    p = p if p.is_absolute() else REPO_ROOT / p
    return yaml.safe_load(p.read_text())


def _profile(defaults: dict[str, Any], profile: str) -> dict[str, Any]:
    if profile not in defaults.get("profiles", {}):
        raise ValueError(f"profile {profile!r} is not in the run defaults' profiles")
    return dict(defaults["profiles"][profile])


def sampling_for(defaults: dict[str, Any], profile: str | None) -> SamplingParams:
    """The ``sampling`` section of the run defaults, overridden by the profile's."""
    sampling = dict(defaults["sampling"])
    if profile:
        sampling.update(_profile(defaults, profile).get("sampling", {}))
    return SamplingParams.model_validate(sampling)


def resolve(spec: RunSpec, run_id: str, tasks: list[str], defaults: dict[str, Any], profile: str | None) -> RunConfig:
    """Defaults from rl_config.yaml, overridden by the profile (e.g. ``tiny``), then by the spec."""
    grpo = dict(defaults["grpo"])
    lora = dict(defaults["lora"])
    full = dict(defaults["full_weights"])
    if profile:
        prof = _profile(defaults, profile)
        lora.update(prof.pop("lora", {}))
        full.update(prof.pop("full_weights", {}))
        prof.pop("sampling", None)
        prof.pop("mcts", None)
        grpo.update(prof)
    overrides = {
        "num_generations": spec.num_generations,
        "learning_rate": spec.learning_rate,
        "loss_type": spec.loss_type,
        "group_mode": spec.group_mode,
        "branch": spec.branch,
        "temperature": spec.temperature,
        "tis_cap": spec.tis_cap,
        "behaviour_gap_alarm": spec.behaviour_gap_alarm,
        "max_steps": spec.max_steps,
        "eval_every": spec.eval_every,
        "eval_episodes": spec.eval_episodes,
    }
    grpo.update({k: v for k, v in overrides.items() if v is not None})
    if spec.lora_target is not None:
        lora["target"] = spec.lora_target
    if spec.full_weights is not None:
        full["modules"] = spec.full_weights
    if spec.full_weights_lr is not None:
        full["lr"] = spec.full_weights_lr
    grpo["episodes"] = spec.episodes
    mcts = None
    if spec.algorithm is Algorithm.MCTS:
        search = dict(defaults["mcts"])
        if profile:
            search.update(_profile(defaults, profile).get("mcts", {}))
        search.update(spec.mcts_overrides())
        # An iteration's searches are the jobs of one update (each search is one job).
        grpo["jobs_per_update"] = spec.searches_per_iteration or search.pop("searches_per_iteration")
        search.pop("searches_per_iteration", None)
        mcts = MCTSConfig(**search)
    tracking = dict(defaults["tracking"])
    if spec.report_to is not None:
        tracking["report_to"] = spec.report_to
    return RunConfig(
        run_id=run_id,
        domain=spec.domain,
        tasks=tasks,
        algorithm=spec.algorithm,
        seed=spec.seed,
        profile=profile,
        lora_r=lora["r"],
        lora_alpha=lora["alpha"],
        lora_target_modules=list(lora["target_modules"]),
        lora_target=lora.get("target", "language"),
        full_weights=list(full["modules"]),
        full_weights_lr=full["lr"],
        sampling=sampling_for(defaults, profile),
        report_to=tracking["report_to"],
        record_episodes_every=tracking["record_episodes_every"],
        mcts=mcts,
        **{k: grpo[k] for k in RunConfig.model_fields if k in grpo},
    )
