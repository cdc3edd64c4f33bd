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

The loop below is the search; its pieces live beside it: a leaf's expansion in
``halo_trainer.mcts.expansion``, a child's rollout in ``mcts.rollout_value``, and the search's state
(sessions, counters, which node may widen or is closed, re-entry) in ``mcts.search_context``.

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

import logging
from pathlib import Path

from halo.schemas import RolloutJob
from halo.schemas.search_settings import MCTSConfig
from halo_trainer.mcts.critics import check_critic, make_critic
from halo_trainer.mcts.expansion import expand, widen
from halo_trainer.mcts.rollout_value import rollout
from halo_trainer.mcts.search_context import SearchContext
from halo_trainer.mcts.search_state import ReentryRefused, SearchResult, StateStore
from halo_trainer.rollout.play import RunStopped, Services, StopCheck

logger = logging.getLogger("halo.trainer.mcts")

__all__ = ["ReentryRefused", "SearchResult", "StateStore", "check_critic", "search"]


async def search(
    svc: Services, job: RolloutJob, cfg: MCTSConfig, run_dir: Path, stopped: StopCheck | None = None
) -> SearchResult:
    """Run ``cfg.simulations`` simulations from a fresh session on ``job``'s task and seed; write the
    tree to ``<run_dir>/trees/<job_id>.json``. ``stopped`` is asked before every simulation after
    the first: True abandons the search (``RunStopped``)."""
    s = SearchContext(svc, job, cfg, StateStore(Path(run_dir) / "snapshots"), make_critic(cfg, svc))
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
                    added = await widen(s, leaf, sim)
                    if added is None:
                        continue  # nothing new to try there, or the infrastructure failed
                    child, live_child = added
                else:
                    live = await expand(s, leaf, sim)
                    if not live:
                        continue  # nothing new proposed, or every candidate failed on the infrastructure
                    # the new children, all unvisited: the critic's favourite (ties: the first added)
                    child = max(live, key=lambda i: tree.node(i).q)
                    for other, session in live.items():
                        if other != child and session is not None:
                            await s.close(session[0])
                    live_child = live[child]
                value = await rollout(s, child, live_child, sim)
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
