"""A run's resolved configuration: configs/rl_config.yaml, then the profile, then the RunSpec.

The resolved ``RunConfig`` is logged, saved in the run folder (``config.json``) and in every
checkpoint, so a run can be reproduced from its folder alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from halo.schemas import Algorithm, BranchPolicy, GroupMode, LossType, RunSpec
from halo.settings import REPO_ROOT
from halo.settings.trainer import LearnerConfig

EVAL_SEED_OFFSET = 1_000_000  # evaluation seeds never overlap training seeds


class RunConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    domain: str
    tasks: list[str]
    algorithm: Algorithm
    episodes: int = Field(description="Training episodes; a step-group job counts as one episode")
    num_generations: int
    temperature: float
    learning_rate: float
    loss_type: LossType
    kl_coef: float
    clip_eps: float
    epochs_per_batch: int
    jobs_per_update: int
    max_grad_norm: float
    use_behaviour_logprobs: bool
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
    profile: str | None = None

    def learner_config(self, base: LearnerConfig, max_completion_tokens: int) -> LearnerConfig:
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
                "max_completion_tokens": max_completion_tokens,
            }
        )


def load_defaults(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    p = p if p.is_absolute() else REPO_ROOT / p
    return yaml.safe_load(p.read_text())


def resolve(spec: RunSpec, run_id: str, tasks: list[str], defaults: dict[str, Any], profile: str | None) -> RunConfig:
    """Defaults from rl_config.yaml, overridden by the profile (e.g. ``tiny``), then by the spec."""
    grpo = dict(defaults["grpo"])
    lora = dict(defaults["lora"])
    if profile:
        prof = dict(defaults.get("profiles", {}).get(profile, {}))
        lora.update(prof.pop("lora", {}))
        grpo.update(prof)
    overrides = {
        "num_generations": spec.num_generations,
        "learning_rate": spec.learning_rate,
        "loss_type": spec.loss_type,
        "group_mode": spec.group_mode,
        "branch": spec.branch,
        "temperature": spec.temperature,
        "max_steps": spec.max_steps,
        "eval_every": spec.eval_every,
        "eval_episodes": spec.eval_episodes,
    }
    grpo.update({k: v for k, v in overrides.items() if v is not None})
    grpo["episodes"] = spec.episodes
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
        **{k: grpo[k] for k in RunConfig.model_fields if k in grpo},
    )
