"""The MCTS search driver (halo_trainer.mcts.search) on the in-process stand-ins: the tree it builds,
rollouts and their returns, failures, stops and cancellation, and the critic's configuration.

Progressive widening and the budget: test_mcts_search_widening.py; rollout depth and kept rollout
steps: test_mcts_search_rollouts.py; the search-versus-sampling script and `halo eval --search`:
test_mcts_search_comparison.py; the Playground clone through the real services: test_mcts_search_clone.py.
"""

from __future__ import annotations

import asyncio

import pytest

from halo_trainer.mcts.search import check_critic, search
from halo_trainer.mcts.tree import load_tree
from halo_trainer.rollout.play import RunStopped
from tests.trainer.mcts.search_stand_ins import SnapshotEnv, cfg, distinct_clicks, rollout_succeeds, root_succeeds
from tests.trainer.stand_ins import PolicyStandIn, click, job_for, services


async def test_search_builds_a_tree_reenters_states_exactly_and_closes_every_session(tmp_path):
    env = SnapshotEnv()
    svc = services(env=env, policy=PolicyStandIn(root_succeeds))
    result = await search(svc, job_for(), cfg(), tmp_path)
    tree = result.tree

    assert env.sessions == {}, "every session the search opened is closed"
    assert result.reentries > 0 and result.reentry_mismatches == 0
    assert tree.record.env_steps == len(env.steps)
    assert tree.record.simulations == 6
    root = tree.root
    assert set(root.children) == {
        '{"action":"left_click","coordinate":[100,500]}',
        '{"action":"terminate","status":"success"}',
        "<invalid>",
    }
    win = tree.node(root.children['{"action":"terminate","status":"success"}'])
    assert win.terminal and win.success is True and win.state_ref is None
    invalid = tree.node(root.children["<invalid>"])
    assert invalid.state_ref == root.state_ref and invalid.screenshot_sha256 == root.screenshot_sha256
    assert root.prompt_token_ids == [1, 2, 3]
    assert tree.summary()["success_found"] == 1.0
    # Once visited, the success is worth 1 and every other path 0: it is the most visited.
    assert tree.best_path() == [0, win.id]
    assert root.visits == 6 and sum(ch.visits for ch in tree.children(0)) == 6

    saved = load_tree(result.path)
    assert result.path == tmp_path / "trees" / f"{job_for().job_id}.json"
    assert saved.record == tree.record
    for node in tree.record.nodes:
        if node.state_ref is not None:
            assert (tmp_path / "snapshots" / f"{node.state_ref}.json").is_file()


async def test_a_success_reached_in_a_rollout_is_found(tmp_path):
    env = SnapshotEnv()
    result = await search(services(env=env, policy=PolicyStandIn(rollout_succeeds)), job_for(), cfg(), tmp_path)
    tree = result.tree
    assert not any(n.success for n in tree.record.nodes), "the success is a rollout's step, not a node"
    assert tree.root.q_mcts > 0  # rollouts cut off at the depth limit were asked the task: 0
    assert tree.summary()["success_found"] == 1.0 and result.metrics()["success_found"] == 1.0


async def test_rollouts_run_to_the_depth_limit_and_ask_the_task(tmp_path):
    env = SnapshotEnv()
    policy = PolicyStandIn(lambda n, i: [click(100 * (k + 1)) for k in range(n)])
    # max_depth 4 with max_steps 4: rollouts end by truncation; the env gives no verdict there (None: 0)
    result = await search(services(env=env, policy=policy), job_for(), cfg(simulations=3, max_depth=4), tmp_path)
    tree = result.tree
    assert env.sessions == {}
    assert tree.summary()["success_found"] == 0.0
    assert all(n.q_mcts in (None, 0.0) for n in tree.record.nodes)
    assert tree.record.env_steps == len(env.steps)
    # three distinct children at the root, each rolled out once; then their children
    assert len(tree.root.children) == 3 and tree.root.visits == 3


async def test_dense_return_backs_up_rewards(tmp_path):
    env = SnapshotEnv()
    policy = PolicyStandIn(lambda n, i: [click(100 * (k + 1)) for k in range(n)])
    result = await search(
        services(env=env, policy=policy), job_for(), cfg(simulations=1, max_depth=2, dense_return=True), tmp_path
    )
    tree = result.tree
    child = tree.node(tree.best_path()[1])
    # the stand-in reward pays x/1000: the child's own click, then the rollout's click(100)
    assert child.q_mcts == pytest.approx(child.reward + 0.1)


async def test_infra_failures_are_not_scored(tmp_path):
    env = SnapshotEnv()
    env.fail_steps = {click(200).short()}
    policy = PolicyStandIn(lambda n, i: [click(100 * (k + 1)) for k in range(n)])
    result = await search(services(env=env, policy=policy), job_for(), cfg(simulations=1), tmp_path)
    assert '{"action":"left_click","coordinate":[200,500]}' not in result.tree.root.children
    assert result.infra_errors == 1
    assert env.sessions == {}


async def test_a_stopped_run_abandons_the_search_and_closes_sessions(tmp_path):
    env = SnapshotEnv()
    calls = 0

    async def stopped() -> bool:
        nonlocal calls
        calls += 1
        return calls >= 2

    with pytest.raises(RunStopped):
        await search(services(env=env), job_for(), cfg(), tmp_path, stopped=stopped)
    assert env.sessions == {}


async def test_cancellation_closes_every_session(tmp_path):
    env = SnapshotEnv()
    hold = asyncio.Event()
    policy = PolicyStandIn()

    original = policy.sample_actions

    async def slow(*args, **kwargs):
        if len(policy.requests) >= 1:  # the rollout's first sample never comes back
            hold.set()
            await asyncio.Event().wait()
        return await original(*args, **kwargs)

    policy.sample_actions = slow
    task = asyncio.create_task(search(services(env=env, policy=policy), job_for(), cfg(), tmp_path))
    await hold.wait()
    assert env.sessions, "the search holds sessions while it waits"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert env.sessions == {}


def test_the_openai_critic_without_a_key_is_a_clear_configuration_error(monkeypatch):
    monkeypatch.delenv("HALO_TEST_CRITIC_KEY", raising=False)
    check_critic(cfg())
    check_critic(cfg(critic="self"))
    keyless = cfg(critic="openai", critic_api_key_env="HALO_TEST_CRITIC_KEY")
    with pytest.raises(
        ValueError, match="critic 'openai' needs an API key .* set the environment variable HALO_TEST_CRITIC_KEY"
    ):
        check_critic(keyless)
    monkeypatch.setenv("HALO_TEST_CRITIC_KEY", "dummy")
    check_critic(keyless)


async def test_an_openai_critic_without_a_key_is_refused_before_any_env_call(tmp_path, monkeypatch):
    monkeypatch.delenv("HALO_TEST_CRITIC_KEY", raising=False)
    env = SnapshotEnv()
    with pytest.raises(ValueError, match="needs an API key"):
        await search(
            services(env=env), job_for(), cfg(critic="openai", critic_api_key_env="HALO_TEST_CRITIC_KEY"), tmp_path
        )
    assert env.resets == []


async def test_the_neutral_critic_scores_every_child_one_half(tmp_path):
    result = await search(
        services(env=SnapshotEnv(), policy=PolicyStandIn(distinct_clicks)),
        job_for(),
        cfg(simulations=1, critic="neutral", max_children=4),
        tmp_path,
    )
    assert [n.q_critic for n in result.tree.children(0)] == [0.5, 0.5, 0.5]
