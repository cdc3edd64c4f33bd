"""The value of a new child of one search: its verdict if it ended the episode, else a rollout from it
with the current policy; with ``rollout_nodes``, the rollout's steps kept as tree nodes."""

from __future__ import annotations

from dataclasses import dataclass

from halo.actions import canonical_action
from halo.policy_client import Candidate
from halo.schemas import Observation
from halo.schemas.choices import RolloutNodes
from halo_trainer.mcts.search_context import SearchContext, sampled
from halo_trainer.rollout.play import Branch, episode_ended, execute_candidate, sample_candidates


async def rollout(
    s: SearchContext, child: int, live: tuple[str, Observation] | None, sim: int
) -> tuple[float, float, int] | None:
    """The value of ``child`` as (success 1/0, the rollout's rewards, the node to back up from):
    its success if terminal, else a rollout's from it with the current policy (one sample per
    step) to a terminal state, ``max_depth`` or ``rollout_depth`` actions past the child; None on
    an infra failure. With ``rollout_nodes`` milestone (all) a rollout step that pays a milestone
    (any step) becomes a tree node, with the rollout's steps before it (``_keep``): the value is
    then backed up from the deepest node kept, and the rewards are those after it."""
    tree, node = s.tree, s.tree.node(child)
    if node.terminal:
        return float(bool(node.success)), 0.0, child
    session, obs = live if live is not None else (None, None)
    if session is None or obs is None:
        obs = await s.reenter(child)
        session = obs.session_id
    history, depth, ret, parent = list(node.history), node.depth, 0.0, s.edge[child]
    keep = s.cfg.rollout_nodes
    at, steps = child, []  # the deepest tree node of the path, and the rollout's steps below it
    limit = s.cfg.max_depth
    if s.cfg.rollout_depth is not None:
        limit = min(limit, node.depth + s.cfg.rollout_depth)
    try:
        while depth < limit and s.steps_left() != 0:
            [cand], prompt, version = await sample_candidates(s.svc, s.job, obs, history, 1, depth, episode=sim)
            tid = f"{s.search_id}-x{sim}-r{depth}"
            branch = await execute_candidate(s.svc, s.job, s.search_id, depth, obs, session, cand, tid, tid, parent)
            tree.record.env_steps += cand.action is not None
            if branch.infra_error:
                s.infra_errors += 1
                return None
            ret += branch.reward.total
            parent, depth = tid, depth + 1
            if cand.action is not None:
                history.append(cand.action.short())
            ended = episode_ended(branch)
            if keep is not RolloutNodes.NONE:
                ref = None
                if branch.step is not None and not ended:
                    ref = s.states.put(await s.svc.env.snapshot(session))
                steps.append(_Kept(cand, branch, tid, version, list(prompt.prompt_token_ids), ref))
                if keep is RolloutNodes.ALL or branch.reward.milestones:
                    at, steps, ret = _keep(s, at, steps), [], 0.0  # its rewards are the nodes' now
            if branch.step is not None:
                if ended:
                    return float(bool(branch.step.info.get("task_success"))), ret, at
                obs = branch.step.observation
        # cut off at the depth limit or the budget (answers that did not parse took no env step): ask the task now
        verdict = await s.svc.env.validate(session)
        return float(bool(verdict.success)), ret, at
    finally:
        await s.close(session)


def _keep(s: SearchContext, at: int, steps: list[_Kept]) -> int:
    """Record a rollout's ``steps`` below node ``at`` as tree nodes (an action already tried there
    is that child); returns the deepest."""
    tree = s.tree
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
            **sampled(cand, kept.version),
            state_ref=parent.state_ref if step is None else kept.state_ref,
            url=parent.url if step is None else step.observation.url,
            screenshot_sha256=parent.screenshot_sha256 if step is None else step.observation.screenshot.sha256,
            reward=kept.branch.reward.total,
            terminal=ended,
            success=step.info.get("task_success") if ended and step is not None else None,
            q_critic=None,  # no critic ranked it: its value is the search's alone
        )
        s.edge[child.id] = kept.transition_id
        s.rollout_nodes += 1
        at = child.id
    return at


@dataclass(frozen=True)
class _Kept:
    """A rollout step that may become a tree node: what ``Tree.add_child`` needs of it."""

    cand: Candidate
    branch: Branch
    transition_id: str
    version: int
    prompt_token_ids: list[int]
    state_ref: str | None  # its state's snapshot (None when the episode ended there or nothing ran)
