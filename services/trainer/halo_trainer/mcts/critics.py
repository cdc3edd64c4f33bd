"""The critics of an MCTS search (Agent Q): who scores the K candidate children of a node.

One interface, ``CandidateCritic.score(node, branches) -> K floats in [0, 1]`` (a child's
``q_critic``), called once per expansion after the children were executed; three critics:

- ``progress``: the milestone progress the reward service paid for the edge into each child (no
  model; the embedded default, since a random-weight model cannot critique).
- ``neutral``: 0.5 for every child, no critic at all (the ablation that separates what exact
  re-entry and the search's values find from what the critic adds).
- ``self``: Agent Q's AI self-critique. ONE request to the policy's vLLM, to the run's current
  adapter (the model that proposed the actions, as in Agent Q, where actor and critic are one
  model), with the node's screenshot, the goal, the actions so far and the candidate actions as a
  numbered list, asking for a ranking. vLLM's structured outputs constrain the answer to
  ``Ranking: i, j, ...`` (exactly K numbers of 1..K), so even the tiny random model answers
  something parseable.
- ``openai``: the same messages to any OpenAI-compatible chat endpoint (``critic_base_url``,
  ``critic_model``, the key from the environment variable ``critic_api_key_env``), unconstrained:
  such an endpoint need not accept vLLM's grammar, so its answer is parsed and may be refused.

A ranking becomes scores by rank: the r-th (0-based) of K gets ``(K-1-r)/(K-1)``; numbers after
their first mention are ignored, and candidates never mentioned share the rank after the last one
mentioned. An answer that did not parse (``<invalid>``) is not shown to the critic and scores 0.
These prompts are never trained on, so they live here rather than in ``halo.prompts`` (whose
messages the learner must rebuild token for token).

A critic that fails (a ``CallError``) or answers something that is not a ranking
(``CriticAnswerError``) does not stop the search: ``SearchContext.score`` gives that node's children the
neutral 0.5 and counts the failure (``mcts/critic_failures``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from halo.openai_client import OpenAIChatClient
from halo.prompts import history_lines, png_data_url
from halo.schemas import Observation, RolloutJob
from halo.schemas.search_settings import Critic, MCTSConfig
from halo_trainer.rollout.play import Branch, Services

NEUTRAL = 0.5  # a node's children's score when its critic failed
CRITIC_ROLE = (
    "You are a careful critic of a web agent. Given the task goal, the actions taken so far and the "
    "current screenshot, you judge which proposed next action most likely leads to completing the task."
)


class CriticAnswerError(ValueError):
    """The critic answered, but not with a ranking of the candidates."""


@dataclass(frozen=True)
class NodeView:
    """What a critic is shown of the node whose children it scores."""

    job: RolloutJob
    obs: Observation  # the node's state as re-entered (its screenshot is the one the policy saw)
    history: list[str]  # actions from the root, oldest first


class CandidateCritic(Protocol):
    async def score(self, node: NodeView, branches: Sequence[Branch]) -> list[float]:
        """One score in [0, 1] per branch (a candidate of ``node`` and what executing it gave)."""
        ...

    async def aclose(self) -> None: ...


def check_critic(cfg: MCTSConfig) -> None:
    """Refuse a critic this process cannot run (a configuration error, before any env call)."""
    if cfg.critic is Critic.OPENAI and not cfg.critic_api_key():
        raise ValueError(
            f"critic 'openai' needs an API key for {cfg.critic_base_url}: set the environment variable "
            f"{cfg.critic_api_key_env} (critic_api_key_env names it) for the trainer and its workers, "
            "or use critic 'self' or 'progress'"
        )


def make_critic(cfg: MCTSConfig, svc: Services) -> CandidateCritic:
    """The search's critic; close it with ``aclose`` when the search ends."""
    check_critic(cfg)
    if cfg.critic is Critic.PROGRESS:
        return ProgressCritic()
    if cfg.critic is Critic.NEUTRAL:
        return NeutralCritic()
    if cfg.critic is Critic.SELF:
        return SelfCritic(svc)
    client = OpenAIChatClient(
        cfg.critic_api_key(), cfg.critic_model, base_url=cfg.critic_base_url, max_retries=1, timeout_s=120.0
    )
    return OpenAICritic(svc, client)


class ProgressCritic:
    """A child's milestone progress, as the reward service paid it for the edge into the child."""

    async def score(self, node: NodeView, branches: Sequence[Branch]) -> list[float]:
        return [min(1.0, max(0.0, b.reward.progress)) for b in branches]

    async def aclose(self) -> None:
        pass


class NeutralCritic:
    """Every child the neutral 0.5: no critic, so what the search finds comes from its own values
    (exact re-entry, rollouts, backup) alone; the ablation of a comparison."""

    async def score(self, node: NodeView, branches: Sequence[Branch]) -> list[float]:
        return [NEUTRAL] * len(branches)

    async def aclose(self) -> None:
        pass


# -- the ranking critics ------------------------------------------------------------------------------
def ranking_regex(k: int) -> str:
    """Exactly ``k`` numbers of 1..k after ``Ranking: `` (vLLM's regex grammar; repeats allowed)."""
    number = "(" + "|".join(str(i) for i in range(k, 0, -1)) + ")"
    return f"Ranking: {number}(, {number}){{{k - 1}}}"


def ranking_messages(node: NodeView, actions: Sequence[str], png: bytes) -> list[dict]:
    """The critic's chat: goal, history, the node's screenshot, the numbered candidate actions."""
    past = "\n".join(history_lines(node.history, node.job.sampling.history_limit)) or "(none yet)"
    listed = "\n".join(f"{i}. {a}" for i, a in enumerate(actions, start=1))
    example = ", ".join(str(i) for i in range(len(actions), 0, -1))
    ask = (
        f"Proposed next actions:\n{listed}\n\nRank all {len(actions)} proposed actions from the most to the "
        "least likely to lead to completing the task. Answer with one line and nothing else: the action "
        f"numbers, best first, separated by commas, in the form\nRanking: {example}"
    )
    return [
        {"role": "system", "content": [{"type": "text", "text": CRITIC_ROLE}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Task goal: {node.obs.goal}\n\nPrevious actions (oldest first):\n{past}"},
                {"type": "text", "text": "\nCurrent screenshot:"},
                {"type": "image_url", "image_url": {"url": png_data_url(png)}},
                {"type": "text", "text": "\n" + ask},
            ],
        },
    ]


def parse_ranking(answer: str, k: int) -> list[float]:
    """``k`` scores from an answer ranking 1..k, best first; ``CriticAnswerError`` without one."""
    match = re.search(r"ranking\s*:?\s*([0-9][0-9,\s>]*)", answer, re.IGNORECASE)
    numbers = [int(n) for n in re.findall(r"[0-9]+", match.group(1))] if match else []
    order: list[int] = []
    for n in numbers:
        if 1 <= n <= k and n - 1 not in order:
            order.append(n - 1)
    if not order:
        raise CriticAnswerError(f"not a ranking of {k} actions: {answer[:200]!r}")
    rank = {index: r for r, index in enumerate(order)}
    return [(k - 1 - rank.get(i, len(order))) / (k - 1) for i in range(k)]


class _RankingCritic:
    """Shows the model the node and its candidate actions; scores by the rank it gives each."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    async def score(self, node: NodeView, branches: Sequence[Branch]) -> list[float]:
        ranked = [i for i, b in enumerate(branches) if b.candidate.action is not None]
        scores = [0.0] * len(branches)  # an answer that did not parse is no action: the worst
        if len(ranked) == 1:
            scores[ranked[0]] = 1.0  # nothing to compare it with
        if len(ranked) <= 1:
            return scores
        actions = [branches[i].candidate.action.short() for i in ranked]
        png = await self.svc.env.screenshot(node.obs.screenshot.sha256)
        answer = await self.ask(node, ranking_messages(node, actions, png), len(actions))
        for i, s in zip(ranked, parse_ranking(answer, len(actions)), strict=True):
            scores[i] = s
        return scores

    async def ask(self, node: NodeView, messages: list[dict], k: int) -> str:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


class SelfCritic(_RankingCritic):
    """Agent Q's self-critique: the run's current adapter on the policy's vLLM, grammar-constrained."""

    async def ask(self, node: NodeView, messages: list[dict], k: int) -> str:
        version = await self.svc.current_policy(node.job.run_id)
        # On the replica the search samples from (its job's), as every sample of the search is.
        return await self.svc.policy.complete(
            messages,
            model=version.adapter_name,
            max_tokens=8 + 4 * k,
            regex=ranking_regex(k),
            job_id=node.job.job_id,
            run_id=node.job.run_id,
        )


class OpenAICritic(_RankingCritic):
    """The ranking from an OpenAI-compatible chat endpoint (e.g. GPT-4o), parsed from its text."""

    def __init__(self, svc: Services, client: OpenAIChatClient) -> None:
        super().__init__(svc)
        self.client = client

    async def ask(self, node: NodeView, messages: list[dict], k: int) -> str:
        return await self.client.chat(messages, temperature=0.0, max_tokens=64 + 4 * k)

    async def aclose(self) -> None:
        await self.client.aclose()
