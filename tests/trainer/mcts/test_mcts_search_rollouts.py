"""The MCTS search's rollouts on the stand-ins: steps kept as nodes (``rollout_nodes``) and the rollout depth."""

from __future__ import annotations

import pytest

from halo.schemas import Action, Snapshot
from halo_trainer.mcts.search import search
from tests.trainer.mcts.search_stand_ins import MilestoneReward, SnapshotEnv, cfg, distinct_clicks
from tests.trainer.stand_ins import PolicyStandIn, click, job_for, services


@pytest.mark.parametrize("rollout_nodes, kept", [("none", 0), ("milestone", 2), ("all", 3)])
async def test_rollout_steps_that_pay_a_milestone_become_nodes(tmp_path, rollout_nodes, kept):
    """Found in review (``rollout_nodes``): a rollout's states were scored and backed up but never
    kept, so the search could not return to a milestone found there. With ``milestone`` the step
    that pays one becomes a node, with the rollout's steps before it; with ``all`` every step does;
    ``none`` (the default) keeps none. One simulation: the root's child, then a rollout of three
    steps (depth 1 to 4) whose second step pays the stand-in's milestone (a click at x = 999)."""
    env = SnapshotEnv()
    policy = PolicyStandIn()

    def script(n: int, i: int) -> list[Action | None]:
        if n > 1:
            return distinct_clicks(n, i)
        return [click(999 if len(policy.requests[-1]["history"]) == 2 else 50)]

    policy.script = script
    result = await search(
        services(env=env, policy=policy, reward=MilestoneReward()),
        job_for(),
        cfg(simulations=1, widening=0.5, max_children=4, max_depth=4, rollout_nodes=rollout_nodes),
        tmp_path,
    )
    tree = result.tree
    assert tree.record.env_steps == len(env.steps) == 4 and len(tree.record.nodes) == 2 + kept
    if kept:
        path = tree.path(len(tree.record.nodes) - 1)
        assert [tree.node(i).action for i in path[2:]] == [click(50), click(999), click(50)][:kept]
        assert all(tree.node(i).visits == 1 for i in path), "backed up from the deepest node kept"
        assert all(tree.node(i).q_critic is None for i in path[2:])  # no critic ranked them
        assert tree.node(path[1]).prompt_token_ids  # the rollout's prompt at the node it started from
        # the milestone's state (depth 3) is kept and re-entered exactly
        paid = tree.node(path[3])
        assert paid.action == click(999) and not paid.terminal and paid.state_ref is not None
        snapshot = Snapshot.model_validate_json((tmp_path / "snapshots" / f"{paid.state_ref}.json").read_bytes())
        obs = (await env.restore(snapshot)).observation
        assert obs.screenshot.sha256 == paid.screenshot_sha256
        await env.close(obs.session_id)
    assert env.sessions == {}


async def test_kept_rollout_nodes_are_searched_from(tmp_path):
    """A longer search with ``rollout_nodes: all`` re-enters the kept states (no mismatch) and spends
    its budget."""
    env = SnapshotEnv()
    result = await search(
        services(env=env, policy=PolicyStandIn(distinct_clicks), reward=MilestoneReward()),
        job_for(),
        cfg(simulations=100, widening=0.5, max_children=4, max_depth=4, rollout_nodes="all", env_step_budget=30),
        tmp_path,
    )
    tree = result.tree
    assert tree.record.env_steps == len(env.steps) == 30
    assert result.reentry_mismatches == 0 and result.reentries > 0
    kept = [n for n in tree.record.nodes[1:] if n.q_critic is None]  # no critic ranked a rollout's step
    assert kept, "rollout steps were kept"
    # the search widened from kept states: a kept node with a child the critic scored
    assert any(tree.node(c).q_critic is not None for n in kept for c in n.children.values())
    assert env.sessions == {}


# --- rollout depth -----------------------------------------------------------------------------


@pytest.mark.parametrize("depth, steps_per_simulation", [(0, 1), (1, 2)])
async def test_the_rollout_depth_bounds_each_rollout_and_the_rest_of_the_budget_grows_the_tree(
    tmp_path, depth, steps_per_simulation
):
    env = SnapshotEnv()
    result = await search(
        services(env=env, policy=PolicyStandIn(distinct_clicks)),
        job_for(),
        cfg(simulations=6, widening=0.5, max_children=4, max_depth=3, rollout_depth=depth),
        tmp_path,
    )
    tree = result.tree
    # each simulation: one expansion (a new node), then at most `depth` rollout steps; the task is
    # asked for its verdict where the rollout stops
    assert tree.record.env_steps == len(env.steps) == 6 * steps_per_simulation
    assert len(tree.record.nodes) == 1 + 6
    if depth == 0:  # no rollout: every new node that did not end the episode is asked at once
        assert env.validations == sum(not n.terminal for n in tree.record.nodes[1:]) > 0
    assert env.sessions == {}


async def test_without_a_rollout_depth_rollouts_run_to_max_depth(tmp_path):
    env = SnapshotEnv()
    result = await search(
        services(env=env, policy=PolicyStandIn(distinct_clicks)),
        job_for(),
        cfg(simulations=1, widening=0.5, max_children=4, max_depth=3, rollout_depth=None),
        tmp_path,
    )
    assert result.tree.record.env_steps == 1 + 2  # the child, then two rollout steps to depth 3
