"""From rollout results to a learner batch: grouping, staleness, advantages, exact model inputs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import torch

from halo.prompts import prompt_settings, tool_call_regex
from halo.schemas import GroupMode, Transition
from halo.screenshots import ScreenshotStore
from halo_model.grammar import grammar_masks
from halo_model.inputs import SampleRecord, build_batch
from halo_trainer.learner.learner import LearnerBatch
from halo_trainer.learner.objective import group_advantages


@dataclass
class Selection:
    """The transitions an update learns from, and what was dropped on the way (counted in metrics)."""

    groups: list[list[Transition]] = field(default_factory=list)
    dropped_stale: int = 0
    dropped_infra: int = 0
    dropped_singleton: int = 0


def select_groups(
    transitions: Sequence[Transition], current_version: int, max_staleness: int, mode: GroupMode
) -> Selection:
    """Group by ``group_id``; drop infra-error and stale transitions, and groups left with one member
    (one candidate, or one episode): with no baseline to compare with, their advantage is 0."""
    out = Selection()
    by_group: dict[str, list[Transition]] = defaultdict(list)
    for t in transitions:
        if t.infra_error:
            out.dropped_infra += 1
        elif current_version - t.policy_version > max_staleness:
            out.dropped_stale += 1
        else:
            by_group[t.group_id].append(t)
    for members in by_group.values():
        size = len(members) if mode is GroupMode.STEP else len({t.episode_id for t in members})
        if size < 2:
            out.dropped_singleton += len(members)
            continue
        out.groups.append(members)
    return out


def advantages(groups: Sequence[Sequence[Transition]], mode: GroupMode, advantage: str) -> list[list[float]]:
    """Per-transition advantages, one list per group.

    Step groups compare the N candidates' immediate rewards at one state. Episode groups compare
    the N episodes' returns; every transition of an episode gets its episode's advantage.
    """
    out: list[list[float]] = []
    for members in groups:
        if mode is GroupMode.STEP:
            rewards = torch.tensor([t.reward.total for t in members], dtype=torch.float64)
            out.append(group_advantages(rewards, advantage).tolist())
        else:
            episodes = sorted({t.episode_id for t in members})
            returns = {t.episode_id: t.episode_return or 0.0 for t in members}
            adv = group_advantages(torch.tensor([returns[e] for e in episodes], dtype=torch.float64), advantage)
            by_episode = dict(zip(episodes, adv.tolist(), strict=True))
            out.append([by_episode[t.episode_id] for t in members])
    return out


def contrast_across_seeds(
    groups: Sequence[Sequence[Transition]], adv: Sequence[Sequence[float]], weight: float
) -> tuple[list[list[float]], int]:
    """Take out of each advantage ``weight`` times the part its action earned on every seed alike.

    A step group's advantage mixes two things: how good the action is on any seed of the task, and
    how much better it is on this seed's page. Where the batch played one action (the same text,
    at the same step, after the same history) on two or more seeds of one task, the mean of its
    per-seed advantages is the first part; subtracting it leaves the second. With ``weight`` 1 the
    summed update has no component that moves every seed's policy the same way: on a moving target
    that is the screen-blind step, which otherwise outweighs the screen-dependent one about 100 to
    1 (docs/results.md). The baseline depends on the action, so the update is the gradient of
    sum_s E[A_s(a) - mean_s' A_s'(a)], not of the return: on this task both peak at reading the
    screen, but a task whose answer is the same on every seed gets no signal where actions
    coincide. Actions played on one seed only keep their advantage. Returns the advantages and how
    many transitions were contrasted.
    """
    keys = [[(t.task_id, t.step, tuple(t.prompt.history), t.completion_text) for t in g] for g in groups]
    return contrast_by_key(keys, adv, weight)


def contrast_by_key(
    keys: Sequence[Sequence[Hashable]], adv: Sequence[Sequence[float]], weight: float
) -> tuple[list[list[float]], int]:
    """``contrast_across_seeds`` over groups whose members are named by ``keys``: one key is one
    action (task, step, history, text); a key in two or more groups is contrasted."""
    per_action: dict[Hashable, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for g, (members, values) in enumerate(zip(keys, adv, strict=True)):
        for key, a in zip(members, values, strict=True):
            per_action[key][g].append(a)
    shared: dict[Hashable, float] = {}
    for key, by_group in per_action.items():
        if len(by_group) > 1:
            shared[key] = sum(sum(v) / len(v) for v in by_group.values()) / len(by_group)
    out = [
        [a - weight * shared.get(key, 0.0) for key, a in zip(members, values, strict=True)]
        for members, values in zip(keys, adv, strict=True)
    ]
    return out, sum(key in shared for members in keys for key in members)


def learner_batch(
    transitions: Sequence[Transition],
    advantage: Sequence[float],
    processor,
    store: ScreenshotStore,
    *,
    use_behaviour_logprobs: bool,
    vocab_size: int | None = None,
) -> LearnerBatch:
    """Rebuild each prompt exactly as vLLM saw it (``PromptMismatch`` otherwise) and batch them.

    The prompt's history limit and viewport, and the grammar, come from the transitions' own
    ``sampling`` (one batch, one way of sampling). Under ``structured_outputs="regex"`` the
    grammar's per-token allowed masks (``halo.prompts.tool_call_regex``) are replayed so that the
    learner's log-probs are over the same renormalised distribution vLLM's behaviour log-probs are:
    tokens the grammar forced then carry no gradient, and the importance ratio is exact.
    """
    kinds = {t.sampling for t in transitions}
    if len(kinds) != 1:
        raise ValueError(f"one learner batch needs one way of sampling; these transitions have {len(kinds)}")
    sampling = kinds.pop()
    if sampling.structured_outputs == "json":
        raise ValueError("structured_outputs=json cannot be replayed by the learner: use regex or off")
    grammar = tool_call_regex() if sampling.structured_outputs == "regex" else None
    records = [
        SampleRecord(
            goal=t.prompt.goal,
            history=t.prompt.history,
            screenshots=[store.get(t.prompt.screenshot_sha256)],
            completion_token_ids=t.completion_token_ids,
            prompt_token_ids=t.prompt.prompt_token_ids,
        )
        for t in transitions
    ]
    inputs = build_batch(processor, records, **prompt_settings(sampling))
    behaviour = None
    if use_behaviour_logprobs:
        behaviour = torch.zeros(inputs.completion_mask.shape, dtype=torch.float32)
        for i, t in enumerate(transitions):
            behaviour[i, : len(t.behaviour_logprobs)] = torch.tensor(t.behaviour_logprobs, dtype=torch.float32)
    allowed = None
    if grammar is not None:
        if vocab_size is None:
            raise ValueError("a grammar needs the model's vocab_size")
        allowed = grammar_masks(processor.tokenizer, grammar, [t.completion_token_ids for t in transitions], vocab_size)
    return LearnerBatch(
        inputs=inputs,
        advantages=torch.tensor(list(advantage), dtype=torch.float32),
        behaviour_logprobs=behaviour,
        allowed=allowed,
    )
