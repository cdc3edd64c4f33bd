"""The named choices a run's settings take (algorithms, losses, group modes, critics...).

They live apart from the messages that carry them so that the run's knobs (``halo.schemas.knobs``)
can be declared from them without an import cycle; ``runs``, ``rollout`` and ``search_settings``
import them from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Algorithm(StrEnum):
    """A run's algorithm; its record is ``ALGORITHMS[algorithm]``, its loop the trainer's
    ``halo_trainer.loops.LOOPS[algorithm]``."""

    GRPO = "grpo"
    MCTS = "mcts"


@dataclass(frozen=True)
class AlgorithmRecord:
    """What the rest of the system knows of an algorithm, read from here and nowhere else: the
    agent modes and the CLI's help (``title``), which knobs a run of it takes (``own_section``: the
    request's validation, the resolved config, the command line's sections), whether it trains by
    preference pairs (``trains_by_dpo``: the learner's memory plan), and what a progress line shows
    of its last update (``progress``)."""

    title: str  # a few words
    own_section: str | None  # the knob section (``halo.schemas.knobs``) only its runs take; None: none
    trains_by_dpo: bool  # step-level DPO on preference pairs rather than the policy loss
    progress: tuple[tuple[str, str, str], ...]  # (label, metric key, format) of the progress line


ALGORITHMS: dict[Algorithm, AlgorithmRecord] = {
    Algorithm.GRPO: AlgorithmRecord(
        title="online GRPO",
        own_section=None,
        trains_by_dpo=False,
        progress=(("reward", "rollout/mean_reward", ".3f"), ("success", "rollout/success_rate", ".2f")),
    ),
    Algorithm.MCTS: AlgorithmRecord(
        title="MCTS (Agent Q)",
        own_section="mcts",
        trains_by_dpo=True,
        progress=(("pairs", "dpo/pairs", ".0f"), ("success found", "mcts/success_found", ".2f")),
    ),
}

# Each algorithm in a few words (the records' titles): the agent modes (``halo.modes``: one
# promotable mode per algorithm) and the CLI's ``--algorithm`` help are built from it.
ALGORITHM_TITLES: dict[Algorithm, str] = {algorithm: record.title for algorithm, record in ALGORITHMS.items()}


def section_owner(section: str) -> Algorithm | None:
    """The algorithm whose runs alone take the knobs of ``section``; None for a section every run takes."""
    return next((a for a, r in ALGORITHMS.items() if r.own_section == section), None)


def takes_section(algorithm: Algorithm | str, section: str) -> bool:
    """Whether a run of ``algorithm`` takes the knobs of ``section``."""
    owner = section_owner(section)
    return owner is None or owner == algorithm


class Advantage(StrEnum):
    """How a group's rewards become advantages (the estimators: ``halo_trainer.learner.objective``)."""

    DR_GRPO = "dr_grpo"  # A = r - mean(r)
    GRPO = "grpo"  # A = (r - mean(r)) / (std(r) + eps)
    RLOO = "rloo"  # A = r - mean of the other G - 1 rewards (REINFORCE leave-one-out)
    REINFORCE_PP_BASELINE = "reinforce_pp_baseline"  # A = (r - mean(r)) / std over the whole batch (REINFORCE++)


class LossNorm(StrEnum):
    """What a batch's summed token losses are divided by."""

    CONSTANT = "constant"  # max_tokens * G: every token weighs the same (Dr. GRPO; TRL's "dr_grpo")
    SEQUENCE = "sequence"  # each completion's own length, then G (GRPO; TRL's "grpo")


class ImportanceLevel(StrEnum):
    """What one importance ratio covers (the ratios: ``halo_trainer.learner.objective.RATIOS``)."""

    TOKEN = "token"  # one ratio per token (PPO, GRPO)
    SEQUENCE = "sequence"  # one per completion: exp(mean over its tokens of the log-ratio) (GSPO)


# A run saved when one knob, loss_type, chose both: what each of its values meant.
LOSS_TYPE_BEFORE = {
    "dr_grpo": {"advantage": "dr_grpo", "loss_norm": "constant"},
    "grpo": {"advantage": "grpo", "loss_norm": "sequence"},
}


def split_loss_type(data: dict) -> dict:
    """``data`` with a saved ``loss_type`` read as ``advantage`` and ``loss_norm``."""
    if "loss_type" not in data:
        return data
    data = dict(data)
    given = data.pop("loss_type")
    for name, value in LOSS_TYPE_BEFORE.get(str(given), {"advantage": given}).items():
        data.setdefault(name, value)
    return data


class GroupMode(StrEnum):
    STEP = "step"  # N actions sampled at one state, executed in N forks of that state
    EPISODE = "episode"  # N full episodes of one task, advantage on the episode return


class TaskSampling(StrEnum):
    """Which task each training job of a several-task run plays."""

    ROUND_ROBIN = "round_robin"  # job i plays tasks[i % len(tasks)]
    SIGNAL = "signal"  # drawn with weights that follow the task's recent mean |advantage|


class BranchPolicy(StrEnum):
    """Which fork a step-group episode continues from."""

    SAMPLED = "sampled"  # candidate 0: an on-policy sample
    BEST = "best"  # highest reward
    RANDOM = "random"


class Critic(StrEnum):
    """Who scores the K candidate actions at a node (``q_critic``)."""

    SELF = "self"  # the policy's own model ranks them from the screenshot and goal (Agent Q's self-critique)
    OPENAI = "openai"  # an OpenAI-compatible endpoint ranks them (needs a key)
    PROGRESS = "progress"  # the reward service's milestone progress of each child state (no model needed)
    NEUTRAL = "neutral"  # every child 0.5: the search's own values alone (the critic ablation)


class RolloutNodes(StrEnum):
    """Which of a search rollout's executed steps become tree nodes (states the search can re-enter)."""

    NONE = "none"  # none: a rollout's states are scored and backed up, never kept (Agent Q)
    MILESTONE = "milestone"  # a step that pays a milestone, with the rollout's steps before it (LATS-like)
    ALL = "all"  # every executed step


class Selection(StrEnum):
    """How a search picks the child to descend into."""

    UCB1 = "ucb1"  # q + c * sqrt(ln N / (1 + n))
    PUCT = "puct"  # q + c * P * sqrt(N) / (1 + n), P the critic's score normalised over the siblings


class Reference(StrEnum):
    """The reference policy of the DPO log-ratio."""

    BASE = "base"  # the base model: the LoRA adapter disabled
    ITERATION = "iteration"  # the adapter as it was when the iteration began (Agent Q's pi_ref <- pi_theta_i)


StructuredMode = Literal["off", "regex", "json"]

# Experiment trackers a run reports to (``none`` alone: only the run folder's own files).
TrackerName = Literal["none", "tensorboard", "wandb", "trackio", "mlflow"]

# Where a run's LoRA adapter reaches (halo_model.lora says which modules each one covers); the
# vision side is applied only by a server started with tower LoRA (HALO_POLICY_TOWER_LORA).
LoraTarget = Literal["language", "language+merger", "language+tower"]

# Named sets of base-model modules a run trains in full beside the LoRA adapter (``full_weights``);
# halo_model.full_weights says which parameters each one covers.
FULL_WEIGHT_PRESETS = ("vision_merger", "vision_last_blocks", "vision", "all")
_MODULE_NAME = re.compile(r"^(model|lm_head)(\.[A-Za-z0-9_]+)*$")


def check_full_weights(names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``full_weights`` entries are presets or module names of the HF model; duplicates dropped."""
    bad = [n for n in names if n not in FULL_WEIGHT_PRESETS and not _MODULE_NAME.match(n)]
    if bad:
        raise ValueError(
            f"full_weights {bad}: neither a preset ({', '.join(FULL_WEIGHT_PRESETS)}) nor a module name of the "
            "Hugging Face model (e.g. model.visual.merger, model.visual.blocks.26, lm_head)"
        )
    return tuple(dict.fromkeys(names))


def check_trackers(names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``report_to``: ``none`` alone or trackers; duplicates dropped."""
    if "none" in names and len(names) > 1:
        raise ValueError(f"report_to {list(names)}: 'none' cannot be combined with a tracker")
    return tuple(dict.fromkeys(names))
