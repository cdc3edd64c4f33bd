"""What a run's learner is built from, by the trainer's settings and the run's config: the model,
its processor, the learner's settings and the memory plan of the card it runs on.

The run manager builds every run's learner from these (``halo_trainer.api.runs``), and ``halo doctor``
(``halo_trainer.checks.doctor``) builds its one from them too, so that the self-check measures the
learner a run gets. Nothing heavy is imported at the top: the trainer's API imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from halo.settings.trainer import LearnerConfig, TrainerSettings
from halo_model.resolution import resolve_model


def learner_model(settings: TrainerSettings, *, build: bool) -> str:
    """The model the learner loads: the trainer's own setting, else its target's default (the tiny
    Qwen3-VL on the cpu target, found or built exactly as the policy service finds or builds it)."""
    return resolve_model(settings.model, settings.target, build=build)


@dataclass
class LearnerParts:
    model_path: str
    processor: Any
    config: LearnerConfig  # the trainer's learner settings with the run's knobs


def learner_parts(settings: TrainerSettings, run: Any) -> LearnerParts:
    """``run`` (a ``RunConfig``): its learner's model, processor and settings, before the model loads."""
    from halo_model.loading import load_processor

    model_path = learner_model(settings, build=True)
    # The image budget must be the policy server's: check_served_prompt compares the two.
    processor = load_processor(model_path, **settings.processor_kwargs())
    return LearnerParts(model_path, processor, run.learner_config(settings.resolved_learner()))


def memory_plan(settings: TrainerSettings, run: Any, parts: LearnerParts, learner_gpus: int = 1) -> Any:
    """The learner's memory plan (``memory.plan``) for ``run``: on the gpu target against the card as
    it is now (vLLM already holding its share when it shares the card), on the cpu target against no
    limit (the host's RAM is not planned)."""
    from halo_trainer.learner.memory import plan as plans

    dtype = settings.resolved_dtype()
    work = plans.workload_for(run, parts.config, dtype, parts.processor, learner_gpus=learner_gpus)
    dims = plans.ModelDims.from_pretrained(parts.model_path)
    if settings.target != "gpu":
        return plans.plan(dims, work, plans.Card(total_gib=float("inf"), policy_shares_card=False))
    return plans.plan(dims, work, plans.card_from_device(settings.resolved_device(), settings.policy_shares_card))
