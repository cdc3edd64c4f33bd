"""From rollout results to a learner batch: each group's advantages and the exact model inputs.

Which groups an update keeps and the seed contrast are GRPO's own (``halo_trainer.grpo``); the
advantages are here because every loop's episode log shows them (``advantages_of``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import torch

from halo.prompts import prompt_settings, tool_call_regex
from halo.schemas import GroupMode, Transition
from halo.screenshots import ScreenshotStore
from halo_model.grammar import grammar_masks
from halo_model.inputs import SampleRecord, build_batch
from halo_trainer.learner.learner import LearnerBatch
from halo_trainer.learner.objective import batch_advantages


def advantages(groups: Sequence[Sequence[Transition]], mode: GroupMode, advantage: str) -> list[list[float]]:
    """Per-transition advantages, one list per group; the groups are one batch (a batch-level
    estimator such as REINFORCE++'s scales them together).

    Step groups compare the N candidates' immediate rewards at one state. Episode groups compare
    the N episodes' returns; every transition of an episode gets its episode's advantage.
    """
    rewards: list[torch.Tensor] = []
    episodes: list[list[str]] = []
    for members in groups:
        if mode is GroupMode.STEP:
            rewards.append(torch.tensor([t.reward.total for t in members], dtype=torch.float64))
        else:
            episodes.append(sorted({t.episode_id for t in members}))
            returns = {t.episode_id: t.episode_return or 0.0 for t in members}
            rewards.append(torch.tensor([returns[e] for e in episodes[-1]], dtype=torch.float64))
    per_group = batch_advantages(rewards, advantage)
    if mode is GroupMode.STEP:
        return [adv.tolist() for adv in per_group]
    out: list[list[float]] = []
    for members, ids, adv in zip(groups, episodes, per_group, strict=True):
        by_episode = dict(zip(ids, adv.tolist(), strict=True))
        out.append([by_episode[t.episode_id] for t in members])
    return out


def advantages_of(mode: GroupMode, advantage: str) -> Callable[[Sequence[Sequence[Transition]]], list[list[float]]]:
    """``advantages`` with a run's group mode and estimator fixed: what a loop hands its episode log."""
    return partial(advantages, mode=mode, advantage=advantage)


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
