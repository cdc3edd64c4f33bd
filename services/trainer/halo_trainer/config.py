"""A run's resolved configuration: the knobs' defaults, the run defaults file, the profile, the RunSpec.

Each knob is declared once (``halo.schemas.knobs``); ``RunConfig`` has one field per knob, with
the knob's name, type and bounds. The resolved ``RunConfig`` is logged, saved in the run folder
(``config.json``) and in every checkpoint, so a run can be reproduced from its folder alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

# Re-exported: the trainer's modules and tests take them from here.
from halo.run_defaults import load_defaults as load_defaults
from halo.run_defaults import profile_for as profile_for
from halo.run_defaults import resolved_values as resolved_values
from halo.schemas import Algorithm, GroupMode, RunSpec, SamplingParams, knobs
from halo.schemas.choices import ALGORITHMS, section_owner, split_loss_type
from halo.schemas.search_settings import MCTSConfig
from halo.settings.trainer import LearnerConfig

EVAL_SEED_OFFSET = 1_000_000  # evaluation seeds never overlap training seeds

# The knobs a RunConfig holds at its top level; the sampling section and each algorithm's own section
# (``ALGORITHMS[...].own_section``: the field of that name) are nested models.
TOP_LEVEL = [k for k in knobs.KNOBS if k.section != "sampling" and section_owner(k.section) is None]


class _ResolvedRun(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    domain: str
    tasks: list[str]
    algorithm: Algorithm
    profile: str | None = None
    sampling: SamplingParams = Field(description="How the policy is asked; every job and transition carries it")
    mcts: MCTSConfig | None = Field(None, description="Search and DPO settings; set exactly when algorithm is mcts")

    @model_validator(mode="before")
    @classmethod
    def _saved_before_renames(cls, data: Any) -> Any:
        # A run saved before a knob got its one name resumes under that name.
        if isinstance(data, dict):
            data = split_loss_type(data)
        if isinstance(data, dict) and "clip_eps" in data:
            data = dict(data)
            eps = data.pop("clip_eps")
            data.setdefault("clip_eps_low", eps)
            data.setdefault("clip_eps_high", eps)
        return data

    @field_validator("report_to", check_fields=False)
    @classmethod
    def _trackers(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(n for n in names if n != "none")

    @model_validator(mode="after")
    def _tis_needs_one_pass(self) -> _ResolvedRun:
        if self.tis_cap is not None and self.epochs_per_batch > 1:
            # The truncated weight needs the learner's log-probs from before the first pass; the
            # learner keeps none, so a second pass would run without any trust region.
            raise ValueError(
                f"tis_cap={self.tis_cap} needs epochs_per_batch=1 (got {self.epochs_per_batch}): set tis_cap to "
                "null or make one pass per batch"
            )
        return self

    @model_validator(mode="after")
    def _contrast_needs_step_groups(self) -> _ResolvedRun:
        if self.seed_contrast and self.group_mode is not GroupMode.STEP:
            # Episode groups diverge after their first step, so there is no one action whose
            # reward on several seeds can be compared.
            raise ValueError(
                f"seed_contrast={self.seed_contrast} needs group_mode=step (got {self.group_mode.value}): "
                "set seed_contrast to 0 or use step groups"
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
        """The learner's settings (optimiser, memory) with the run's knobs the learner reads."""
        values = self.model_dump() | self.sampling.model_dump()
        return base.model_copy(update={k.name: values[k.name] for k in knobs.KNOBS if k.learner})


RunConfig = create_model(
    "RunConfig", __base__=_ResolvedRun, __module__=__name__, **knobs.fields(TOP_LEVEL, how="resolved")
)


# Run knobs that were the trainer's settings (HALO_TRAINER_LEARNER__*) before runs owned them.
FORMERLY_TRAINER_LEARNER = ("warmup_steps", "weight_decay", "adam_betas", "adam_eps")


def saved_run(saved: dict[str, Any]) -> RunConfig:
    """The ``RunConfig`` of a run folder's ``config.json`` (``{"run": ..., "trainer": ...}``, or the run's
    config alone as the first trainers saved it), to resume the run as it ran.

    A run saved before the optimiser's settings were run knobs ran with its trainer's, which were
    saved beside it (``trainer.learner``): it takes those, and their ``before`` where none were saved.
    """
    run = saved.get("run", saved) if isinstance(saved, dict) else None
    if not isinstance(run, dict):
        raise ValueError("config.json holds no run config")
    run = dict(run)
    trainer = saved.get("trainer")
    trainer_learner = trainer.get("learner") if isinstance(trainer, dict) else None
    trainer_learner = trainer_learner if isinstance(trainer_learner, dict) else {}
    for name in FORMERLY_TRAINER_LEARNER:
        if name not in run and name in trainer_learner:
            run[name] = trainer_learner[name]
    return RunConfig.model_validate(run)


def resident_adapters(max_staleness: int) -> int:
    """Adapters the run loop keeps in vLLM at most: the versions rollouts may still use (current -
    max_staleness .. current, ``PolicyPublisher._retire``) plus the next one, which loads before
    the oldest is unloaded."""
    return max_staleness + 2


class DefaultsError(ValueError):
    """The run defaults file cannot serve runs (unreadable, not YAML, or naming what is no knob)."""


def checked_defaults(path: str | Path, profile: str | None) -> dict[str, Any]:
    """The run defaults file, read and checked with ``profile`` (every key a knob, every value of
    its knob's type): a trainer checks it at start and before each run, so a broken file is told
    as such instead of failing the run's request."""
    try:
        defaults = load_defaults(path)
        if not isinstance(defaults, dict):
            raise ValueError("it holds no sections")
        values = resolved_values({}, defaults, profile)
        for k in knobs.KNOBS:
            try:
                TypeAdapter(k.type).validate_python(values[k.name])
            except ValidationError as exc:
                raise ValueError(f"{k.name}: {exc.errors()[0]['msg']} (got {values[k.name]!r})") from exc
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise DefaultsError(f"the run defaults file {path} is not usable: {exc}") from exc
    return defaults


def sampling_for(defaults: dict[str, Any], profile: str | None) -> SamplingParams:
    """How a run with this defaults file and profile asks the policy (the ``sampling`` knobs)."""
    values = resolved_values({}, defaults, profile)
    return SamplingParams(**{k.name: values[k.name] for k in knobs.in_section("sampling")})


def resolve(spec: RunSpec, run_id: str, tasks: list[str], defaults: dict[str, Any], profile: str | None) -> RunConfig:
    """The run's config: the knobs' defaults, the defaults file, the profile (e.g. ``tiny``), then the spec."""
    values = resolved_values(spec.knob_values(), defaults, profile)
    sampling = {k.name: values.pop(k.name) for k in knobs.in_section("sampling")}
    # Every algorithm's own knobs leave the top level; the run's own algorithm's become its field.
    own = {s: {k.name: values.pop(k.name) for k in knobs.in_section(s)} for s in knobs.SECTIONS if section_owner(s)}
    own_section = ALGORITHMS[spec.algorithm].own_section
    return RunConfig(
        run_id=run_id,
        domain=spec.domain,
        tasks=tasks,
        algorithm=spec.algorithm,
        profile=profile,
        sampling=SamplingParams(**sampling),
        mcts=MCTSConfig(**own["mcts"]) if own_section == "mcts" else None,
        **values,
    )
