"""The MCTS search's progressive widening, its env-step budget, and refused re-entries, on the stand-ins."""

from __future__ import annotations

import math

import pytest

from halo.actions import canonical_action
from halo.schemas import ResetResponse, Snapshot
from halo_trainer.mcts.search import search
from tests.trainer.mcts.search_stand_ins import DriftingInnerEnv, SnapshotEnv, cfg, distinct_clicks
from tests.trainer.stand_ins import PolicyStandIn, click, job_for, services


async def test_widening_executes_one_action_per_visit_and_grows_with_the_visits(tmp_path):
    env = SnapshotEnv()
    policy = PolicyStandIn(distinct_clicks)
    result = await search(
        services(env=env, policy=policy), job_for(), cfg(simulations=1, widening=0.5, max_children=4), tmp_path
    )
    tree = result.tree
    # one simulation: the root's most proposed action alone was executed, then one rollout step per depth
    assert list(tree.root.children) == ['{"action":"left_click","coordinate":[100,500]}']
    assert tree.node(tree.root.children['{"action":"left_click","coordinate":[100,500]}']).proposals == 2
    assert tree.record.env_steps == 1 + 2 == len(env.steps)  # the child, then a rollout to max_depth 3
    assert [r["n"] for r in policy.requests] == [4, 1, 1]  # K proposals once, one sample a rollout step

    env = SnapshotEnv()
    result = await search(
        services(env=env, policy=PolicyStandIn(distinct_clicks)),
        job_for(),
        cfg(simulations=8, widening=0.5, max_children=4),
        tmp_path / "b",
    )
    tree = result.tree
    # after n visits a node holds at most ceil((n + 1) ** 0.5) children
    for node in tree.record.nodes:
        if node.children:
            assert len(node.children) <= max(1, math.ceil(node.visits**0.5))
    assert 1 < len(tree.root.children) < 4 and tree.root.visits == 8
    assert env.sessions == {} and result.reentry_mismatches == 0
    # widening 0 executes all of them at the first expansion: best-of-K at the root
    best_of_k = await search(
        services(env=SnapshotEnv(), policy=PolicyStandIn(distinct_clicks)),
        job_for(),
        cfg(simulations=1, widening=0.0, max_children=4),
        tmp_path / "c",
    )
    assert len(best_of_k.tree.root.children) == 3  # 4 samples, 3 distinct actions


@pytest.mark.parametrize("widening", [0.5, 0.0], ids=["widening", "all-at-once"])
async def test_the_env_step_budget_bounds_the_search_exactly(tmp_path, widening):
    env = SnapshotEnv()
    result = await search(
        services(env=env, policy=PolicyStandIn(distinct_clicks)),
        job_for(),
        cfg(simulations=50, widening=widening, max_children=4, env_step_budget=7),
        tmp_path,
    )
    assert result.tree.record.env_steps == len(env.steps) == 7
    assert result.tree.record.simulations < 50
    assert env.sessions == {}


class DriftingEnv(SnapshotEnv):
    """Restores of the root's state come back one action further: another screen than recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.root_restores = 0

    async def restore(self, snapshot: Snapshot) -> ResetResponse:
        if not snapshot.storage_state["actions"]:
            self.root_restores += 1
            snapshot = snapshot.model_copy(update={"storage_state": {**snapshot.storage_state, "actions": ["drifted"]}})
        return await super().restore(snapshot)


@pytest.mark.parametrize("widening", [0.5, 0.0], ids=["widening", "all-at-once"])
async def test_a_reentry_that_shows_another_screen_is_refused(tmp_path, widening):
    env = DriftingEnv()
    result = await search(
        services(env=env, policy=PolicyStandIn(distinct_clicks)), job_for(), cfg(widening=widening), tmp_path
    )
    tree = result.tree
    assert result.reentry_mismatches == 1 and env.root_restores == 1  # refused once, never re-entered again
    assert tree.root.children == {} and tree.root.visits == 0  # nothing searched from the wrong state
    assert env.steps == [] and env.sessions == {}
    assert result.metrics()["reentry_mismatches"] == 1.0


@pytest.mark.parametrize("widening", [0.5, 0.0], ids=["widening", "all-at-once"])
async def test_a_refused_inner_leaf_is_closed_and_the_search_spends_its_budget(tmp_path, widening):
    """Found in review: a leaf whose re-entry was refused was selected again and again, each time
    refused at once, until the simulation cap: the search returned with its budget unspent (seeds 9,
    15 and 17 of the one-action-rollout comparison spent 31, 21 and 23 of 48 env steps)."""
    env = DriftingInnerEnv()
    result = await search(
        services(env=env, policy=PolicyStandIn(distinct_clicks)),
        job_for(),
        cfg(simulations=60, widening=widening, max_children=4, max_depth=3, env_step_budget=20),
        tmp_path,
    )
    tree = result.tree
    refused = tree.root.children[canonical_action(click(100))]
    assert result.reentry_mismatches == 1 and env.drifted == 1  # refused once, never re-entered again
    assert tree.node(refused).children == {}  # nothing searched from the wrong state
    assert tree.record.env_steps == len(env.steps) == 20, "the budget is spent elsewhere"
    assert env.sessions == {}


async def test_a_node_whose_tried_actions_all_ended_the_episode_widens_at_once(tmp_path):
    """A one-action task (max_depth 1: every action ends the episode), so a visit to a tried child adds
    nothing; the root takes a new action every simulation instead of backing up known values."""
    env = SnapshotEnv()
    policy = PolicyStandIn(lambda n, i: [click(100 * (k + 1)) for k in range(n)])
    result = await search(
        services(env=env, policy=policy), job_for(), cfg(simulations=3, widening=0.5, max_depth=1), tmp_path
    )
    tree = result.tree
    assert len(tree.root.children) == 3 and all(ch.terminal for ch in tree.children(0))
    assert tree.record.env_steps == len(env.steps) == 3 and env.sessions == {}


@pytest.mark.parametrize("widening", [0.5, 0.0], ids=["widening", "all-at-once"])
async def test_a_node_whose_k_children_all_ended_asks_for_more_and_spends_the_budget(tmp_path, widening):
    """K = max_children bounded a node's children, so once a one-action task's
    root held K terminal children the search only backed up their known values, simulation after
    simulation, without an env step: a one-action search was best-of-K. K bounds the proposals of one
    request: a node whose children all ended asks the policy for K more."""
    env = SnapshotEnv()
    # every request proposes 4 actions not proposed before
    policy = PolicyStandIn(lambda n, i: [click(10 * i + k + 1) for k in range(n)])
    result = await search(
        services(env=env, policy=policy),
        job_for(),
        cfg(simulations=40, widening=widening, max_children=4, max_depth=1, env_step_budget=10),
        tmp_path,
    )
    tree = result.tree
    assert all(ch.terminal for ch in tree.children(0)) and len(tree.root.children) == 10
    assert tree.record.env_steps == len(env.steps) == 10
    assert all(r["n"] == 4 for r in policy.requests)  # K proposals per request
    assert env.sessions == {}


@pytest.mark.parametrize("widening", [0.5, 0.0], ids=["widening", "all-at-once"])
async def test_a_search_with_nothing_new_to_try_ends_instead_of_spinning(tmp_path, widening):
    """The policy proposes the same 3 actions every time and each ends the episode: once they are
    tried and a request brings nothing new, nothing is left to learn, and the search ends there
    rather than backing up known values until the simulation cap."""
    env = SnapshotEnv()
    policy = PolicyStandIn(lambda n, i: [click(100 * (k % 3 + 1)) for k in range(n)])
    result = await search(
        services(env=env, policy=policy),
        job_for(),
        cfg(simulations=200, widening=widening, max_children=4, max_depth=1, env_step_budget=50),
        tmp_path,
    )
    tree = result.tree
    assert len(tree.root.children) == 3 and tree.record.env_steps == len(env.steps) == 3
    assert tree.record.simulations <= 3 + 1, "no backups of known values without an env step"
    assert env.sessions == {}
