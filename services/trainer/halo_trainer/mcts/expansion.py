"""Expanding a leaf of one search: every distinct new candidate at once (``widening`` 0), or one
more proposed action per visit (progressive widening). Sampling and executing are the rollout
code's (``halo_trainer.rollout.play``), so a search's requests are a GRPO episode's."""

from __future__ import annotations

import asyncio

from halo.schemas import Observation
from halo_trainer.mcts.critics import NodeView
from halo_trainer.mcts.search_context import SearchContext
from halo_trainer.mcts.search_state import ReentryRefused
from halo_trainer.rollout.play import Branch, episode_ended, execute_candidate, sample_candidates


async def expand(s: SearchContext, leaf: int, sim: int) -> dict[int, tuple[str, Observation] | None]:
    """Sample K actions at ``leaf``, execute the distinct new ones each in its own session, and
    record the children. Returns each new child's live session and observation (None for a
    terminal child or one that did not parse, which has no session of its own)."""
    tree, node = s.tree, s.tree.node(leaf)
    obs = await s.reenter(leaf)
    candidates, prompt, version = await sample_candidates(
        s.svc, s.job, obs, list(node.history), s.cfg.max_children, node.depth, episode=sim
    )
    node.prompt_token_ids = list(prompt.prompt_token_ids)
    new = tree.new_candidates(leaf, candidates)
    if not new:  # the policy proposed nothing new here
        s.saturated.add(leaf)
        await s.close(obs.session_id)
        return {}
    if (left := s.steps_left()) is not None:  # execute no more actions than the budget allows
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
        fork = await s.svc.env.fork(obs.session_id, len(runnable) - 1)
        sessions += [f.observation.session_id for f in fork.sessions]
        s.opened.update(sessions)
        try:
            for f in fork.sessions:
                s.check_reentry(leaf, f.observation)
        except ReentryRefused:
            for session in sessions:
                await s.close(session)
            raise
    s.opened.update(sessions)
    where = dict(zip((c.index for c in runnable), sessions, strict=False))
    ids = [f"{s.search_id}-x{sim}-c{i}" for i in range(len(new))]
    group = f"{s.search_id}-n{leaf}"
    branches: list[Branch] = await asyncio.gather(
        *(
            execute_candidate(
                s.svc,
                s.job,
                s.search_id,
                node.depth,
                obs,
                where.get(cand.index, obs.session_id),
                cand,
                tid,
                group,
                s.edge[leaf],
            )
            for (cand, _), tid in zip(new, ids, strict=True)
        )
    )
    tree.record.env_steps += len(runnable)
    if obs.session_id not in where.values():  # nothing ran in the restored session
        await s.close(obs.session_id)
    scored = [b for b in branches if not b.infra_error]
    scores = iter(await s.score(NodeView(s.job, obs, list(node.history)), scored))
    out: dict[int, tuple[str, Observation] | None] = {}
    for (cand, proposals), branch, tid in zip(new, branches, ids, strict=True):
        if branch.infra_error:
            s.infra_errors += 1
            if cand.action is not None:
                await s.close(branch.session_id)
            continue
        child = await s.record(leaf, cand, proposals, branch, version, next(scores))
        s.edge[child] = tid
        live = cand.action is not None and not episode_ended(branch)
        out[child] = (branch.session_id, branch.step.observation) if live and branch.step is not None else None
        if cand.action is not None and not live:
            await s.close(branch.session_id)
    return out


async def widen(s: SearchContext, leaf: int, sim: int) -> tuple[int, tuple[str, Observation] | None] | None:
    """Execute one more of ``leaf``'s proposed actions (sampling K proposals first when none is
    left) and record the child. Returns the child and its live session and observation (None
    for a terminal child or one that did not parse), or None when nothing was added."""
    tree, node = s.tree, s.tree.node(leaf)
    obs = await s.reenter(leaf)
    if not s.pending.get(leaf):
        candidates, prompt, version = await sample_candidates(
            s.svc, s.job, obs, list(node.history), s.cfg.max_children, node.depth, episode=sim
        )
        node.prompt_token_ids = list(prompt.prompt_token_ids)
        fresh = tree.new_candidates(leaf, candidates)
        # The policy's own preference first: the action most of its K samples proposed.
        fresh.sort(key=lambda cand_count: -cand_count[1])
        s.pending[leaf] = [(cand, count, version) for cand, count in fresh]
        if not fresh:
            s.saturated.add(leaf)
            await s.close(obs.session_id)
            return None
    cand, proposals, version = s.pending[leaf].pop(0)
    tid = f"{s.search_id}-x{sim}-c0"
    branch = await execute_candidate(
        s.svc,
        s.job,
        s.search_id,
        node.depth,
        obs,
        obs.session_id,
        cand,
        tid,
        f"{s.search_id}-n{leaf}",
        s.edge[leaf],
    )
    tree.record.env_steps += cand.action is not None
    if branch.infra_error:
        s.infra_errors += 1
        await s.close(obs.session_id)
        return None
    tried = s.tried.setdefault(leaf, [])
    scores = await s.score(NodeView(s.job, obs, list(node.history)), [b for _, b in tried] + [branch])
    child = await s.record(leaf, cand, proposals, branch, version, scores[-1])
    for (sibling, _), score in zip(tried, scores, strict=False):
        tree.set_critic(sibling, score)  # a ranking critic ranked them again beside the new one
    tried.append((child, branch))
    s.edge[child] = tid
    live = cand.action is not None and not episode_ended(branch) and branch.step is not None
    if not live:
        await s.close(obs.session_id)
        return child, None
    return child, (branch.session_id, branch.step.observation)
