"""One MCTS search (Agent Q) over exact browser states, top to bottom.

A node's state is an env snapshot (``GET /sessions/{id}/snapshot``), stored by content hash under
``<run>/snapshots/<sha256>.json`` (the node's ``state_ref``); re-entering a node is one
``POST /sessions/restore``, which must show the node's own screenshot: a re-entry that shows another
screen is refused (closed, counted in ``reentry_mismatches``, the node never re-entered again) and
the simulation ends there without a value. The search, with progressive widening (``widening`` w > 0)::

    root = reset(task, seed); snapshot it; close the session
    repeat `simulations` times, while the env steps taken are below `env_step_budget` (if set)
    and the root is not closed:
        leaf = tree.select_leaf(widen, closed)         # UCB1 on the composite Q, never into a closed
                                                       # node; stop at a node that may take one more
                                                       # child: ceil((n+1)^w) > children, or at once
                                                       # when its children all ended or are closed
        if the leaf is terminal: back up its success; next
        s0 = restore(leaf)                             # one exact copy of the leaf's state
        if the leaf has no proposals left: K candidates = policy.sample(s0, n=max_children)
                                                       # one vLLM request; merged by canonical action,
                                                       # those already tried dropped; none new: the
                                                       # node is saturated (takes no more children)
        execute the most proposed untried action in s0; reward it; snapshot the child
        the critic scores the leaf's tried actions (all of them: a ranking is relative); tree.add_child
        success, rewards = rollout from the child with the current policy to a terminal state,
                           max_depth, rollout_depth actions or the budget (the task's validated
                           success, 1/0, and the rewards; rollout_depth 0: the child's verdict)
        tree.backup(child, success, dense_return, rewards)   # a success counts as found (success_found);
                                                             # with rollout_nodes, from the deepest step kept
        a refused or saturated node is closed when nothing is left below it (each child ended or is
        closed), and so are the ancestors this leaves the same: the next simulation goes elsewhere
    tree.save(<run>/trees)

K (``max_children``) bounds the proposals of one request, not the children of a node: a node whose
proposals are all tried asks for K more when it widens again. So no simulation is spent selecting a
leaf that cannot be entered or backing up values already known while the budget has steps left: a
search returns with its budget unspent only when the root is closed (nothing new anywhere) or the
simulations ran out.

With ``widening`` 0 the first visit of a leaf executes all its distinct candidates at once, each in
its own fork of s0, and the rollout starts from the critic's favourite: every node is a best-of-K,
and a node whose children all ended (or are closed) is expanded again with K new proposals.

Sampling, executing and scoring one action are the rollout code's (``halo_trainer.rollout.play``), so
a search's requests are a GRPO episode's: the same prompts, seeds per step, reward requests and
infrastructure handling. Reward requests of one search share its episode id, and each names the
transition into its parent's state, so the reward service scores every edge against the memory of
its own path (milestones already reached along it are not paid twice).

Critics (``halo_trainer.mcts.critics``) score a node's new children once per expansion: ``progress``
by the milestone progress the reward service paid for each edge, ``self`` and ``openai`` by a model's
ranking of the candidate actions. A critic that fails or does not answer with a ranking gives that
node's children the neutral 0.5 and is counted (``critic_failures``, logged once per search).

Infrastructure failures are never scored: a candidate whose step failed on the infrastructure is not
added (counted in ``infra_errors``), a rollout that meets one is not backed up. A service that is
down raises ``halo.transport.CallError`` out of the search. Every session the search opened is
closed when it ends, also on errors and cancellation.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from halo.actions import canonical_action
from halo.policy_client import Candidate
from halo.schemas import Observation, RolloutJob, TreeNode
from halo.transport import CallError
from halo_trainer.mcts.critics import NEUTRAL, CandidateCritic, CriticAnswerError, NodeView, check_critic, make_critic
from halo_trainer.mcts.search_state import ReentryRefused, SearchResult, StateStore
from halo_trainer.mcts.settings import MCTSConfig, RolloutNodes
from halo_trainer.mcts.tree import Tree
from halo_trainer.rollout.play import (
    Branch,
    RunStopped,
    Services,
    StopCheck,
    episode_ended,
    execute_candidate,
    sample_candidates,
)

logger = logging.getLogger("halo.trainer.mcts")

__all__ = ["ReentryRefused", "SearchResult", "StateStore", "check_critic", "search"]


class _Search:
    """One search's state: the tree, the node states, the sessions it holds, its counters."""

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

    # -- expansion ----------------------------------------------------------------------------------
    async def expand(self, leaf: int, sim: int) -> dict[int, tuple[str, Observation] | None]:
        """Sample K actions at ``leaf``, execute the distinct new ones each in its own session, and
        record the children. Returns each new child's live session and observation (None for a
        terminal child or one that did not parse, which has no session of its own)."""
        tree, node = self.tree, self.tree.node(leaf)
        obs = await self.reenter(leaf)
        candidates, prompt, version = await sample_candidates(
            self.svc, self.job, obs, list(node.history), self.cfg.max_children, node.depth, episode=sim
        )
        node.prompt_token_ids = list(prompt.prompt_token_ids)
        new = tree.new_candidates(leaf, candidates)
        if not new:  # the policy proposed nothing new here
            self.saturated.add(leaf)
            await self.close(obs.session_id)
            return {}
        if (left := self.steps_left()) is not None:  # execute no more actions than the budget allows
            kept, steps = [], 0
            for cand, count in new:
                steps += cand.action is not None
                if steps > left:
                    break
                kept.append((cand, count))
            new = kept
        runnable = [c for c, _ in new if c.action is not None]
        sessions = [obs.session_id]
        if len(runnable) > 1:
            fork = await self.svc.env.fork(obs.session_id, len(runnable) - 1)
            sessions += [f.observation.session_id for f in fork.sessions]
            self.opened.update(sessions)
            try:
                for f in fork.sessions:
                    self.check_reentry(leaf, f.observation)
            except ReentryRefused:
                for session in sessions:
                    await self.close(session)
                raise
        self.opened.update(sessions)
        where = dict(zip((c.index for c in runnable), sessions, strict=False))
        ids = [f"{self.search_id}-x{sim}-c{i}" for i in range(len(new))]
        group = f"{self.search_id}-n{leaf}"
        branches: list[Branch] = await asyncio.gather(
            *(
                execute_candidate(
                    self.svc,
                    self.job,
                    self.search_id,
                    node.depth,
                    obs,
                    where.get(cand.index, obs.session_id),
                    cand,
                    tid,
                    group,
                    self.edge[leaf],
                )
                for (cand, _), tid in zip(new, ids, strict=True)
            )
        )
        tree.record.env_steps += len(runnable)
        if obs.session_id not in where.values():  # nothing ran in the restored session
            await self.close(obs.session_id)
        scored = [b for b in branches if not b.infra_error]
        scores = iter(await self.score(NodeView(self.job, obs, list(node.history)), scored))
        out: dict[int, tuple[str, Observation] | None] = {}
        for (cand, proposals), branch, tid in zip(new, branches, ids, strict=True):
            if branch.infra_error:
                self.infra_errors += 1
                if cand.action is not None:
                    await self.close(branch.session_id)
                continue
            child = await self._record(leaf, cand, proposals, branch, version, next(scores))
            self.edge[child] = tid
            live = cand.action is not None and not episode_ended(branch)
            out[child] = (branch.session_id, branch.step.observation) if live and branch.step is not None else None
            if cand.action is not None and not live:
                await self.close(branch.session_id)
        return out

    async def widen(self, leaf: int, sim: int) -> tuple[int, tuple[str, Observation] | None] | None:
        """Execute one more of ``leaf``'s proposed actions (sampling K proposals first when none is
        left) and record the child. Returns the child and its live session and observation (None
        for a terminal child or one that did not parse), or None when nothing was added."""
        tree, node = self.tree, self.tree.node(leaf)
        obs = await self.reenter(leaf)
        if not self.pending.get(leaf):
            candidates, prompt, version = await sample_candidates(
                self.svc, self.job, obs, list(node.history), self.cfg.max_children, node.depth, episode=sim
            )
            node.prompt_token_ids = list(prompt.prompt_token_ids)
            fresh = tree.new_candidates(leaf, candidates)
            # The policy's own preference first: the action most of its K samples proposed.
            fresh.sort(key=lambda cand_count: -cand_count[1])
            self.pending[leaf] = [(cand, count, version) for cand, count in fresh]
            if not fresh:
                self.saturated.add(leaf)
                await self.close(obs.session_id)
                return None
        cand, proposals, version = self.pending[leaf].pop(0)
        tid = f"{self.search_id}-x{sim}-c0"
        branch = await execute_candidate(
            self.svc,
            self.job,
            self.search_id,
            node.depth,
            obs,
            obs.session_id,
            cand,
            tid,
            f"{self.search_id}-n{leaf}",
            self.edge[leaf],
        )
        tree.record.env_steps += cand.action is not None
        if branch.infra_error:
            self.infra_errors += 1
            await self.close(obs.session_id)
            return None
        tried = self.tried.setdefault(leaf, [])
        scores = await self.score(NodeView(self.job, obs, list(node.history)), [b for _, b in tried] + [branch])
        child = await self._record(leaf, cand, proposals, branch, version, scores[-1])
        for (sibling, _), score in zip(tried, scores, strict=False):
            tree.set_critic(sibling, score)  # a ranking critic ranked them again beside the new one
        tried.append((child, branch))
        self.edge[child] = tid
        live = cand.action is not None and not episode_ended(branch) and branch.step is not None
        if not live:
            await self.close(obs.session_id)
            return child, None
        return child, (branch.session_id, branch.step.observation)

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

    async def _record(
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
            **_sampled(cand, version),
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

    # -- rollout ------------------------------------------------------------------------------------
    async def rollout(
        self, child: int, live: tuple[str, Observation] | None, sim: int
    ) -> tuple[float, float, int] | None:
        """The value of ``child`` as (success 1/0, the rollout's rewards, the node to back up from):
        its success if terminal, else a rollout's from it with the current policy (one sample per
        step) to a terminal state, ``max_depth`` or ``rollout_depth`` actions past the child; None on
        an infra failure. With ``rollout_nodes`` milestone (all) a rollout step that pays a milestone
        (any step) becomes a tree node, with the rollout's steps before it (``_keep``): the value is
        then backed up from the deepest node kept, and the rewards are those after it."""
        tree, node = self.tree, self.tree.node(child)
        if node.terminal:
            return float(bool(node.success)), 0.0, child
        session, obs = live if live is not None else (None, None)
        if session is None or obs is None:
            obs = await self.reenter(child)
            session = obs.session_id
        history, depth, ret, parent = list(node.history), node.depth, 0.0, self.edge[child]
        keep = self.cfg.rollout_nodes
        at, steps = child, []  # the deepest tree node of the path, and the rollout's steps below it
        limit = self.cfg.max_depth
        if self.cfg.rollout_depth is not None:
            limit = min(limit, node.depth + self.cfg.rollout_depth)
        try:
            while depth < limit and self.steps_left() != 0:
                [cand], prompt, version = await sample_candidates(
                    self.svc, self.job, obs, history, 1, depth, episode=sim
                )
                tid = f"{self.search_id}-x{sim}-r{depth}"
                branch = await execute_candidate(
                    self.svc, self.job, self.search_id, depth, obs, session, cand, tid, tid, parent
                )
                tree.record.env_steps += cand.action is not None
                if branch.infra_error:
                    self.infra_errors += 1
                    return None
                ret += branch.reward.total
                parent, depth = tid, depth + 1
                if cand.action is not None:
                    history.append(cand.action.short())
                ended = episode_ended(branch)
                if keep is not RolloutNodes.NONE:
                    ref = None
                    if branch.step is not None and not ended:
                        ref = self.states.put(await self.svc.env.snapshot(session))
                    steps.append(_Kept(cand, branch, tid, version, list(prompt.prompt_token_ids), ref))
                    if keep is RolloutNodes.ALL or branch.reward.milestones:
                        at, steps, ret = self._keep(at, steps), [], 0.0  # its rewards are the nodes' now
                if branch.step is not None:
                    if ended:
                        return float(bool(branch.step.info.get("task_success"))), ret, at
                    obs = branch.step.observation
            # cut off at the depth limit or the budget (answers that did not parse took no env step): ask the task now
            verdict = await self.svc.env.validate(session)
            return float(bool(verdict.success)), ret, at
        finally:
            await self.close(session)

    def _keep(self, at: int, steps: list[_Kept]) -> int:
        """Record a rollout's ``steps`` below node ``at`` as tree nodes (an action already tried there
        is that child); returns the deepest."""
        tree = self.tree
        for kept in steps:
            parent = tree.node(at)
            if not parent.prompt_token_ids:  # the rollout sampled this step from the parent's state
                parent.prompt_token_ids = kept.prompt_token_ids
            key = canonical_action(kept.cand.action)
            if key in parent.children:
                at = parent.children[key]
                continue
            step, cand = kept.branch.step, kept.cand
            ended = step is not None and episode_ended(kept.branch)
            child = tree.add_child(
                at,
                **_sampled(cand, kept.version),
                state_ref=parent.state_ref if step is None else kept.state_ref,
                url=parent.url if step is None else step.observation.url,
                screenshot_sha256=parent.screenshot_sha256 if step is None else step.observation.screenshot.sha256,
                reward=kept.branch.reward.total,
                terminal=ended,
                success=step.info.get("task_success") if ended and step is not None else None,
                q_critic=None,  # no critic ranked it: its value is the search's alone
            )
            self.edge[child.id] = kept.transition_id
            self.rollout_nodes += 1
            at = child.id
        return at


def _sampled(cand: Candidate, version: int) -> dict[str, Any]:
    """A tree child's fields from the candidate that made it: what a DPO pair trains on."""
    return {
        "action": cand.action,
        "parse_error": cand.parse_error,
        "completion_text": cand.text[:20_000],
        "completion_token_ids": cand.token_ids,
        "behaviour_logprobs": cand.logprobs,
        "policy_version": version,
    }


@dataclass(frozen=True)
class _Kept:
    """A rollout step that may become a tree node: what ``Tree.add_child`` needs of it."""

    cand: Candidate
    branch: Branch
    transition_id: str
    version: int
    prompt_token_ids: list[int]
    state_ref: str | None  # its state's snapshot (None when the episode ended there or nothing ran)


async def search(
    svc: Services, job: RolloutJob, cfg: MCTSConfig, run_dir: Path, stopped: StopCheck | None = None
) -> SearchResult:
    """Run ``cfg.simulations`` simulations from a fresh session on ``job``'s task and seed; write the
    tree to ``<run_dir>/trees/<job_id>.json``. ``stopped`` is asked before every simulation after
    the first: True abandons the search (``RunStopped``)."""
    s = _Search(svc, job, cfg, StateStore(Path(run_dir) / "snapshots"), make_critic(cfg, svc))
    try:
        await s.start()
        tree = s.tree
        for sim in range(cfg.simulations):
            if stopped is not None and sim > 0 and await stopped():
                raise RunStopped(f"search {job.job_id} abandoned at simulation {sim}: run {job.run_id} was stopped")
            if s.steps_left() == 0:
                break
            if 0 in s.closed:
                break  # nothing left to try anywhere: every path ended or cannot be re-entered
            leaf = tree.select_leaf(s.can_widen if cfg.widening > 0 else s.can_grow, s.closed)
            node = tree.node(leaf)
            if node.terminal:
                tree.backup(leaf, float(bool(node.success)), cfg.dense_return)
                continue
            if not s.expandable(node):  # its children are closed and it takes no more
                s.settle(leaf)
                continue
            child = None
            try:
                if cfg.widening > 0:
                    added = await s.widen(leaf, sim)
                    if added is None:
                        continue  # nothing new to try there, or the infrastructure failed
                    child, live_child = added
                else:
                    live = await s.expand(leaf, sim)
                    if not live:
                        continue  # nothing new proposed, or every candidate failed on the infrastructure
                    # the new children, all unvisited: the critic's favourite (ties: the first added)
                    child = max(live, key=lambda i: tree.node(i).q)
                    for other, session in live.items():
                        if other != child and session is not None:
                            await s.close(session[0])
                    live_child = live[child]
                value = await s.rollout(child, live_child, sim)
                if value is not None:
                    success, rewards, child = value  # the deepest node a rollout kept, if it kept any
            except ReentryRefused:
                continue  # counted; that node is not searched from again (closed below)
            finally:
                # A refused or saturated node is closed when nothing else is left below it, so the
                # next simulation goes elsewhere and spends the budget instead of stalling here.
                s.settle(child)
                s.settle(leaf)
            if value is not None:
                tree.backup(child, success, cfg.dense_return, rewards)
    finally:
        await s.close_all()
        await s.critic.aclose()
    path = tree.save(Path(run_dir) / "trees")
    logger.info(
        "search %s: %d simulations, %d nodes, %d env steps, success found %s, best path %s",
        job.job_id,
        tree.record.simulations,
        len(tree.record.nodes),
        tree.record.env_steps,
        tree.success_found(),
        tree.best_path(),
    )
    return SearchResult(tree, path, s.reentries, s.mismatches, s.infra_errors, s.critic_failures)
