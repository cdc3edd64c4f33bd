"""One search's state and its bookkeeping (``halo_trainer.mcts.search`` is the search itself): the
tree, the node states, the sessions it holds and its counters; which node selection may enter or
widen, closing a node nothing more can be learnt from, re-entering a node checked by screenshot, the
critic's scores of new children, and recording a child from the candidate that made it."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from halo.policy_client import Candidate
from halo.schemas import Observation, RolloutJob, TreeNode
from halo.schemas.search_settings import MCTSConfig
from halo.transport import CallError
from halo_trainer.mcts.critics import NEUTRAL, CandidateCritic, CriticAnswerError, NodeView
from halo_trainer.mcts.search_state import ReentryRefused, StateStore
from halo_trainer.mcts.tree import Tree
from halo_trainer.rollout.play import Branch, Services, episode_ended

logger = logging.getLogger("halo.trainer.mcts")


class SearchContext:
    """One search's state: the tree, the node states, the sessions it holds, its counters; what
    selection asks of a node, re-entering one, and recording a scored child."""

    tree: Tree

    def __init__(
        self, svc: Services, job: RolloutJob, cfg: MCTSConfig, states: StateStore, critic: CandidateCritic
    ) -> None:
        self.svc, self.job, self.cfg, self.states, self.critic = svc, job, cfg, states, critic
        self.search_id = job.job_id
        self.opened: set[str] = set()  # sessions to close when the search ends
        self.edge: dict[int, str | None] = {0: None}  # node -> the reward transition into it
        self.reentries = self.mismatches = self.infra_errors = self.critic_failures = 0
        self.rollout_nodes = 0  # rollout steps kept as tree nodes (``rollout_nodes``)
        # Progressive widening: each node's proposed actions not yet tried (with how many candidates
        # proposed each, and the policy version that did), the branches of those tried (what the
        # critic ranks), and the nodes that take no more children.
        self.pending: dict[int, list[tuple[Candidate, int, int]]] = {}
        self.tried: dict[int, list[tuple[int, Branch]]] = {}
        self.saturated: set[int] = set()  # the policy proposed nothing new there
        self.refused: set[int] = set()  # a re-entry showed another screen: never re-entered again
        # Nodes selection never enters again: nothing more can be learnt below them (``settle``).
        self.closed: set[int] = set()

    def steps_left(self) -> int | None:
        """Env steps the budget still allows; None without a budget."""
        if not self.cfg.env_step_budget:
            return None
        return max(self.cfg.env_step_budget - self.tree.record.env_steps, 0)

    def expandable(self, node: TreeNode) -> bool:
        """Whether ``node`` can ever take another child: a state to re-enter, one that was not
        refused, and a policy that last proposed something new there."""
        return not (node.terminal or node.state_ref is None or node.id in self.saturated or node.id in self.refused)

    def spent(self, node: TreeNode) -> bool:
        """Whether ``node`` has children and every one of them ended the episode or is closed: visiting
        them again backs up nothing new, only a new action adds information (a one-action task's root)."""
        tried = self.tree.children(node.id)
        return bool(tried) and all(child.terminal or child.id in self.closed for child in tried)

    def can_widen(self, node: TreeNode) -> bool:
        """Whether ``node`` may take one more child now: ceil((n + 1) ** w) after n visits; at once
        when its children are spent (``spent``). K bounds the proposals of one request, not the
        children of a node: when a node's proposals are all tried it asks for K more."""
        if not self.expandable(node):
            return False
        if self.spent(node):
            return True
        return len(node.children) < math.ceil((node.visits + 1) ** self.cfg.widening)

    def can_grow(self, node: TreeNode) -> bool:
        """Without widening: whether an expanded node takes K more proposals, because its children
        are spent (``spent``); a node never expanded is a leaf anyway."""
        return self.expandable(node) and self.spent(node)

    def settle(self, node_id: int | None) -> None:
        """Close ``node_id`` if nothing more can be learnt there (it cannot take another child, and
        each child ended the episode or is closed), then its ancestors that this leaves in the same
        case. Selection never enters a closed node, so a refused leaf or a saturated node whose
        children all ended is not selected again and again without an env step; a closed root
        ends the search."""
        while node_id is not None and node_id not in self.closed:
            node = self.tree.node(node_id)
            if node.terminal or self.expandable(node):
                return
            if any(not ch.terminal and ch.id not in self.closed for ch in self.tree.children(node_id)):
                return
            self.closed.add(node_id)
            node_id = node.parent

    async def close(self, session_id: str) -> None:
        self.opened.discard(session_id)
        await self.svc.env.close(session_id)

    async def close_all(self) -> None:
        sessions, self.opened = list(self.opened), set()
        for result in await asyncio.gather(*(self.svc.env.close(s) for s in sessions), return_exceptions=True):
            if isinstance(result, BaseException):
                logger.warning("search %s: closing a session failed: %s", self.search_id, result)

    # -- the root -----------------------------------------------------------------------------------
    async def start(self) -> None:
        reset = await self.svc.env.reset(
            self.job.task_id, seed=self.job.seed, max_steps=self.cfg.max_depth, run_id=self.job.run_id
        )
        obs = reset.observation
        self.opened.add(obs.session_id)
        ref = self.states.put(await self.svc.env.snapshot(obs.session_id))
        await self.close(obs.session_id)
        self.tree = Tree.start(
            search_id=self.search_id,
            run_id=self.job.run_id,
            task_id=self.job.task_id,
            goal=obs.goal,
            sampling=self.job.sampling,
            alpha=self.cfg.alpha,
            ucb_c=self.cfg.ucb_c,
            state_ref=ref,
            url=obs.url,
            screenshot_sha256=obs.screenshot.sha256,
            selection=self.cfg.selection.value,
        )

    async def reenter(self, node_id: int) -> Observation:
        """A new session in the node's state (restored from its snapshot), checked by screenshot."""
        node = self.tree.node(node_id)
        if node.state_ref is None:
            raise ValueError(f"node {node_id} has no state to re-enter")
        if node_id in self.refused:
            raise ReentryRefused(f"node {node_id} showed another screen when re-entered before")
        obs = (await self.svc.env.restore(self.states.get(node.state_ref))).observation
        self.opened.add(obs.session_id)
        try:
            self.check_reentry(node_id, obs)
        except ReentryRefused:
            await self.close(obs.session_id)
            raise
        return obs

    def check_reentry(self, node_id: int, obs: Observation) -> None:
        """Count a re-entry of the node (a restore or a fork of one); refuse one that shows another
        screen (``ReentryRefused``): what would be searched from it is not the node's state."""
        recorded = self.tree.node(node_id).screenshot_sha256
        self.reentries += 1
        if obs.screenshot.sha256 != recorded:
            self.mismatches += 1
            self.refused.add(node_id)
            logger.warning(
                "search %s: node %d re-entered with screenshot %s, recorded %s; refused",
                self.search_id,
                node_id,
                obs.screenshot.sha256[:12],
                (recorded or "")[:12],
            )
            raise ReentryRefused(f"node {node_id} re-entered with another screen")

    async def score(self, node: NodeView, branches: list[Branch]) -> list[float]:
        """The critic's scores of a node's new children; the neutral 0.5 each when it fails."""
        if not branches:
            return []
        try:
            scores = await self.critic.score(node, branches)
            if len(scores) != len(branches) or not all(0.0 <= s <= 1.0 for s in scores):
                raise CriticAnswerError(f"{len(scores)} scores for {len(branches)} children: {scores}")
            return scores
        except (CallError, CriticAnswerError) as exc:
            self.critic_failures += 1
            if self.critic_failures == 1:  # once per search; the count goes into the metrics
                logger.warning(
                    "search %s: the %s critic failed (%s); its children score %.1f, further failures are counted",
                    self.search_id,
                    self.cfg.critic.value,
                    str(exc)[:300],
                    NEUTRAL,
                )
            return [NEUTRAL] * len(branches)

    async def record(
        self, leaf: int, cand: Candidate, proposals: int, branch: Branch, version: int, q_critic: float
    ) -> int:
        tree, node = self.tree, self.tree.node(leaf)
        step = branch.step
        if step is None:  # did not parse: nothing ran, the child is the parent's state
            state_ref, url, shot = node.state_ref, node.url, node.screenshot_sha256
            terminal, success = False, None
        else:
            terminal = episode_ended(branch)
            success = step.info.get("task_success") if terminal else None
            # A finished episode is never expanded again: its state is not kept.
            state_ref = None if terminal else self.states.put(await self.svc.env.snapshot(branch.session_id))
            url, shot = step.observation.url, step.observation.screenshot.sha256
        child = tree.add_child(
            leaf,
            **sampled(cand, version),
            proposals=proposals,
            state_ref=state_ref,
            url=url,
            screenshot_sha256=shot,
            reward=branch.reward.total,
            terminal=terminal,
            success=success,
            q_critic=q_critic,
        )
        return child.id


def sampled(cand: Candidate, version: int) -> dict[str, Any]:
    """A tree child's fields from the candidate that made it: what a DPO pair trains on."""
    return {
        "action": cand.action,
        "parse_error": cand.parse_error,
        "completion_text": cand.text[:20_000],
        "completion_token_ids": cand.token_ids,
        "behaviour_logprobs": cand.logprobs,
        "policy_version": version,
    }
