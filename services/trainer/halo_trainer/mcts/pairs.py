"""From search trees to DPO batches: each preference's two actions at its node's prompt, as vLLM saw them.

A pair's prompt is the node's (``Tree.prompt``: goal, history, screenshot, vLLM's prompt token
ids); its completions are the two children's sampled token ids. The model inputs are the
learner's (``halo_model.inputs.build_batch``: the prompt is rebuilt and refused if its token ids
differ from vLLM's), and under a regex grammar the structured-output masks are replayed
(``halo_model.grammar.grammar_masks``), so the DPO log-probs are over the distribution vLLM
sampled the candidates from, exactly as GRPO's are.

Pairs are only between explored children (Agent Q's rule, ``Tree.preference_pairs``): visited, or
terminal with their outcome known. An untried child's composite Q is its critic score alone, on
another scale than a visited sibling's mix of rollouts and critic, so such a pair would say which
action the search happened to try first, not which one is better.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from halo.prompts import prompt_settings, tool_call_regex
from halo.screenshots import ScreenshotStore
from halo_model.grammar import grammar_masks
from halo_model.inputs import SampleRecord, build_batch
from halo_trainer.learner.learner import LearnerBatch
from halo_trainer.mcts.tree import Preference, Tree


@dataclass(frozen=True)
class TreePair:
    tree: Tree
    preference: Preference


def tree_pairs(trees: Sequence[Tree], theta: float) -> list[TreePair]:
    """Every preference of every tree (``Tree.preference_pairs``), keeping those whose two actions
    have completion tokens to score (a candidate recorded without tokens cannot be learned from)."""
    out = []
    for tree in trees:
        for pref in tree.preference_pairs(theta):
            if tree.node(pref.chosen).completion_token_ids and tree.node(pref.rejected).completion_token_ids:
                out.append(TreePair(tree, pref))
    return out


def pair_batches(
    pairs: Sequence[TreePair], processor, store: ScreenshotStore, vocab_size: int
) -> tuple[LearnerBatch, LearnerBatch]:
    """The chosen and the rejected actions of ``pairs`` as two learner batches, row i of each pair i."""
    if not pairs:
        raise ValueError("no preference pairs")
    kinds = {p.tree.record.sampling for p in pairs}
    if len(kinds) != 1:
        raise ValueError(f"one DPO batch needs one way of sampling; these trees have {len(kinds)}")
    sampling = kinds.pop()
    if sampling.structured_outputs == "json":
        raise ValueError("structured_outputs=json cannot be replayed by the learner: use regex or off")
    grammar = tool_call_regex() if sampling.structured_outputs == "regex" else None

    def batch(side: str) -> LearnerBatch:
        records, completions = [], []
        for p in pairs:
            prompt = p.tree.prompt(p.preference.node)
            tokens = p.tree.node(getattr(p.preference, side)).completion_token_ids
            completions.append(tokens)
            records.append(
                SampleRecord(
                    goal=prompt.goal,
                    history=prompt.history,
                    screenshots=[store.get(prompt.screenshot_sha256)],
                    completion_token_ids=tokens,
                    prompt_token_ids=prompt.prompt_token_ids,
                )
            )
        inputs = build_batch(processor, records, **prompt_settings(sampling))
        allowed = None if grammar is None else grammar_masks(processor.tokenizer, grammar, completions, vocab_size)
        return LearnerBatch(inputs=inputs, advantages=torch.zeros(len(records)), allowed=allowed)

    return batch("chosen"), batch("rejected")
