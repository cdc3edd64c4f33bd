"""The named choices a run's settings take (algorithms, losses, group modes, critics...).

They live apart from the messages that carry them so that the run's knobs (``halo.schemas.knobs``)
can be declared from them without an import cycle; ``runs``, ``rollout`` and ``search_settings``
import them from here.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal


class Algorithm(StrEnum):
    GRPO = "grpo"
    MCTS = "mcts"


class LossType(StrEnum):
    DR_GRPO = "dr_grpo"  # A = r - mean(r); token loss normalised by a constant
    GRPO = "grpo"  # A = (r - mean(r)) / (std(r) + eps); per-sequence length normalisation


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
