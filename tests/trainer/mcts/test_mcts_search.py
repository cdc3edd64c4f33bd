"""The MCTS search driver (halo_trainer.mcts.search).

Fast tests run it against the in-process stand-ins (tests/trainer/stand_ins.py), whose env state is
the list of actions taken, extended here by snapshot and restore. The slow test runs it on the
Playground clone through the real env (Chromium), reward service and vLLM serving the tiny model.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from halo.actions import canonical_action
from halo.schemas import Action, ResetResponse, Snapshot, ValidationResult
from halo.schemas.search_settings import MCTSConfig
from halo_trainer.mcts.search import check_critic, search
from halo_trainer.mcts.tree import load_tree
from halo_trainer.rollout.play import RunStopped
from tests.script_module import load_script
from tests.trainer.stand_ins import EnvStandIn, PolicyStandIn, RewardStandIn, Session, click, job_for, services

SUCCESS = Action(action="terminate", status="success")


class SnapshotEnv(EnvStandIn):
    """The stand-in env with snapshot/restore: a snapshot is the action list; restore replays it."""

    def __init__(self) -> None:
        super().__init__()
        self.restored: list[tuple[str, str]] = []  # (snapshot's screenshot, restored screenshot)
        self.validations = 0

    async def snapshot(self, session_id: str) -> Snapshot:
        s = self.sessions[session_id]
        state = {"actions": list(s.actions), "seed": s.seed, "max_steps": s.max_steps}
        return Snapshot(
            task_id=s.task_id, url=f"http://site.test/{len(s.actions)}", step=len(s.actions), storage_state=state
        )

    async def restore(self, snapshot: Snapshot) -> ResetResponse:
        st = snapshot.storage_state
        sid = self._new(Session(snapshot.task_id, st["seed"], st["max_steps"], list(st["actions"])))
        return ResetResponse(observation=self._observe(sid))

    async def validate(self, session_id: str) -> ValidationResult:
        self.validations += 1
        return ValidationResult(task_id=self.sessions[session_id].task_id, success=False, reward=0.0)


def cfg(**fields) -> MCTSConfig:
    """The tests below the widening ones check the search that executes all K children at once."""
    return MCTSConfig(
        **{"simulations": 6, "max_children": 3, "max_depth": 3, "critic": "progress", "widening": 0.0, **fields}
    )


def root_succeeds(n: int, i: int) -> list[Action | None]:
    """At every expansion: a click, the success, and an answer that does not parse; rollouts click."""
    return [click(100), SUCCESS, None][:n] if n > 1 else [click(100)]


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


def rollout_succeeds(n: int, i: int) -> list[Action | None]:
    """Expansions click (no child ends the episode at once); every rollout's first action succeeds."""
    return [click(100 * (k + 1)) for k in range(n)] if n > 1 else [SUCCESS]


async def test_a_success_reached_in_a_rollout_is_found(tmp_path):
    env = SnapshotEnv()
    result = await search(services(env=env, policy=PolicyStandIn(rollout_succeeds)), job_for(), cfg(), tmp_path)
    tree = result.tree
    assert not any(n.success for n in tree.record.nodes), "the success is a rollout's step, not a node"
    assert tree.root.q_mcts > 0  # rollouts cut off at the depth limit were asked the task: 0
    assert tree.summary()["success_found"] == 1.0 and result.metrics()["success_found"] == 1.0


async def test_the_script_counts_a_search_whose_rollout_succeeded(tmp_path):
    # The steps of the rollout count against the sampling budget, so its success must count too.
    measure = _script().measure
    row = await measure(
        services(env=SnapshotEnv(), policy=PolicyStandIn(rollout_succeeds)), job_for(), cfg(), tmp_path, 50
    )
    assert row["mcts_success"] is True and row["env_steps"] > 0
    assert row["sampled_success"] is True  # the sampled episode's first action is the success, too
    assert (row["task"], row["seed"]) == ("local.playground-1", 7)


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


# --- progressive widening, the env-step budget, refused re-entries --------------------------------


def distinct_clicks(n: int, i: int) -> list[Action | None]:
    """K distinct clicks at every expansion (the first proposed twice); rollouts click once."""
    return [click(100), click(100), *(click(100 * (k + 2)) for k in range(n - 2))] if n > 1 else [click(50)]


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


class DriftingInnerEnv(SnapshotEnv):
    """Restores of one inner node's state (after ``click(100)``, the root's first child) come back
    one action further: that node is refused when re-entered; the root and every other node re-enter."""

    def __init__(self) -> None:
        super().__init__()
        self.drifted = 0

    async def restore(self, snapshot: Snapshot) -> ResetResponse:
        if snapshot.storage_state["actions"] == [click(100).short()]:
            self.drifted += 1
            state = {**snapshot.storage_state, "actions": [click(100).short(), "drifted"]}
            snapshot = snapshot.model_copy(update={"storage_state": state})
        return await super().restore(snapshot)


@pytest.mark.parametrize("widening", [0.5, 0.0], ids=["widening", "all-at-once"])
async def test_a_refused_inner_leaf_is_closed_and_the_search_spends_its_budget(tmp_path, widening):
    """Issue 47, defect 1: a leaf whose re-entry was refused was selected again and again, each time
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


# --- on the Playground clone, through the real env, reward service and vLLM -------------------------


@pytest.fixture(scope="module")
def clone_services(tiny_model_dir, tmp_path_factory):
    """The sites, env (Chromium), reward service and vLLM (tiny model) on free ports: (env, reward, policy) URLs."""
    from halo.settings.sites import SitesSettings
    from halo_sites.app import create_app as create_sites
    from tests.conftest import free_port
    from tests.env.fixtures import EnvServer, ThreadServer, settings_for
    from tests.policy.conftest import start_policy_server, stop_policy_server, wait_listening
    from tests.reward.conftest import drop_prefix, start_reward_service

    log = tmp_path_factory.mktemp("vllm") / "server.log"
    vllm, policy_port = start_policy_server(tiny_model_dir, log)  # starts first: it takes longest
    prefix = f"test:mcts:{free_port()}:"
    reward, reward_url = start_reward_service(prefix)
    port = free_port()
    try:
        with ThreadServer(create_sites(SitesSettings(host="127.0.0.1", port=port)), "127.0.0.1", port) as sites:
            settings = settings_for(tmp_path_factory.mktemp("env"), sites_url=sites.url)
            with EnvServer(settings) as env:
                wait_listening(vllm, log)
                yield env.url, reward_url, f"http://127.0.0.1:{policy_port}"
    finally:
        reward.terminate()
        reward.wait(timeout=30)
        drop_prefix(prefix)
        stop_policy_server(vllm)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.vllm
async def test_search_on_the_playground_clone_reenters_exact_states(clone_services, tmp_path):
    import httpx

    from halo.clients import EnvClient, RewardClient
    from halo.policy_client import PolicyClient
    from halo.schemas import SamplingParams, Viewport
    from halo_trainer.rollout.play import Services
    from tests.trainer.stand_ins import fixed_policy, version0

    env_url, reward_url, policy_url = clone_services
    env = EnvClient(env_url, timeout_s=120)
    svc = Services(
        env=env,
        policy=PolicyClient(policy_url, "halo-base", timeout_s=300),
        reward=RewardClient(reward_url),
        current_policy=fixed_policy(version0("run-mcts")),
    )
    sampling = SamplingParams(max_tokens=64, structured_outputs="regex", history_limit=8, viewport=Viewport())
    job = job_for("run-mcts", task_id="local.playground-7", seed=3, max_steps=3, sampling=sampling)
    try:
        # Agent Q's self-critique by the served model: one grammar-constrained ranking per expansion.
        result = await search(
            svc, job, cfg(simulations=3, max_children=3, max_depth=3, critic="self", widening=0.5), tmp_path
        )
        tree = result.tree

        assert result.infra_errors == 0 and result.critic_failures == 0
        assert tree.record.simulations == 3
        assert len(tree.record.nodes) > 1 and tree.root.prompt_token_ids
        assert tree.record.env_steps > 0
        # Every expansion re-entered its node by restoring the snapshot: same screenshot as recorded.
        expanded = [n for n in tree.record.nodes if n.children]
        assert result.reentries >= len(expanded) >= 1 and result.reentry_mismatches == 0
        # ...and any node's state re-enters exactly after the search, too.
        kept = [n for n in tree.record.nodes if n.state_ref is not None]
        assert kept
        for node in kept:
            snapshot = Snapshot.model_validate_json((tmp_path / "snapshots" / f"{node.state_ref}.json").read_bytes())
            obs = (await env.restore(snapshot)).observation
            await env.close(obs.session_id)
            assert obs.screenshot.sha256 == node.screenshot_sha256, f"node {node.id}"
        saved = load_tree(result.path)
        assert saved.record == tree.record
        async with httpx.AsyncClient(base_url=env_url) as http:
            assert (await http.get("/sessions")).json() == [], "the search closed every session"
    finally:
        await env.aclose()
        await svc.policy.aclose()
        await svc.reward.aclose()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.vllm
async def test_eval_search_replays_the_returned_path_on_the_playground_clone(clone_services, tmp_path):
    """`halo eval --search`'s replay through the real env: the returned path played from the task's
    start in a fresh session reaches the screen its last tree node recorded, and its verdict is the
    one that node's episode had when it ended there."""
    import httpx

    from halo.clients import EnvClient, RewardClient
    from halo.policy_client import PolicyClient
    from halo.schemas import SamplingParams, Viewport
    from halo_trainer.evaluation.matrix import play_search
    from halo_trainer.rollout.play import Services
    from tests.trainer.stand_ins import fixed_policy, version0

    env_url, reward_url, policy_url = clone_services
    env = EnvClient(env_url, timeout_s=120)
    svc = Services(
        env=env,
        policy=PolicyClient(policy_url, "halo-base", timeout_s=300),
        reward=RewardClient(reward_url),
        current_policy=fixed_policy(version0("run-eval-search")),
    )
    sampling = SamplingParams(max_tokens=64, structured_outputs="regex", history_limit=8, viewport=Viewport())
    settings = cfg(simulations=100, max_children=3, max_depth=3, widening=0.5, env_step_budget=6)
    job = job_for(
        "run-eval-search",
        kind="search",
        task_id="local.playground-7",
        seed=3,
        max_steps=3,
        sampling=sampling,
        mcts=settings,
    )
    try:
        outcome, failures = await play_search(svc, lambda attempt: job, tmp_path, 0)
        assert failures == 0 and outcome["steps"] <= 6
        tree = load_tree(tmp_path / "trees" / f"{job.job_id}.json")
        path = [tree.node(i) for i in tree.record.best_path[1:]]
        assert outcome["actions"] == [n.action_key for n in path]
        assert outcome["replay_steps"] == sum(n.action is not None for n in path)
        if path and path[-1].terminal:
            assert outcome["success"] is bool(path[-1].success)
        # the same actions again, by hand: the screen the path's last node recorded
        reset = await env.reset(job.task_id, seed=job.seed, max_steps=job.max_steps, run_id=job.run_id)
        session, shot = reset.observation.session_id, reset.observation.screenshot.sha256
        for node in path:
            if node.action is not None:
                shot = (await env.step(session, node.action)).observation.screenshot.sha256
        await env.close(session)
        if path:
            assert shot == path[-1].screenshot_sha256
        async with httpx.AsyncClient(base_url=env_url) as http:
            assert (await http.get("/sessions")).json() == [], "the search and the replay closed their sessions"
    finally:
        await env.aclose()
        await svc.policy.aclose()
        await svc.reward.aclose()


def _script():
    return load_script("experiments/search_vs_sampling.py")


async def test_sampled_episodes_stay_within_the_search_budget():
    sampled_within = _script().sampled_within
    job = job_for(kind="train_episode_group", group_size=1, max_steps=2)
    # clicks only: each episode is cut at 2 steps; the third would pass a budget of 5 and does not count
    env = EnvStandIn()
    out = await sampled_within(services(env=env, policy=PolicyStandIn(lambda n, i: [click(100)])), job, 5, 50)
    assert out == {"success": False, "episodes": 3, "env_steps": 5}
    assert env.sessions == {}
    # a success ends the search for one
    out = await sampled_within(services(policy=PolicyStandIn(lambda n, i: [SUCCESS])), job, 5, 50)
    assert out == {"success": True, "episodes": 1, "env_steps": 1}
    # answers that never parse take no env step: bounded by max_episodes
    out = await sampled_within(services(policy=PolicyStandIn(lambda n, i: [None])), job, 5, 4)
    assert out == {"success": False, "episodes": 4, "env_steps": 0}


@pytest.mark.parametrize(
    "env_class, widening, rollout_depth",
    [
        (SnapshotEnv, 0.5, None),
        (SnapshotEnv, 0.0, None),
        (DriftingInnerEnv, 0.5, 1),  # the one-action-rollout comparison's settings, a refused inner leaf
        (DriftingInnerEnv, 0.0, None),
    ],
)
async def test_no_arm_returns_with_its_budget_unspent_except_by_success(tmp_path, env_class, widening, rollout_depth):
    """Issue 47: the search-versus-sampling comparison is fair only if both arms spend E env steps
    (a success may end an arm early). The script's row for one (task, seed), E = 48, K = 8, depth 6."""
    settings = cfg(
        simulations=10_000,
        env_step_budget=48,
        max_children=8,
        max_depth=6,
        widening=widening,
        rollout_depth=rollout_depth,
    )
    policy = PolicyStandIn(distinct_clicks)
    row = await _script().measure(services(env=env_class(), policy=policy), job_for(), settings, tmp_path, 200)
    assert row["mcts_success"] or row["env_steps"] == 48
    assert row["sampled_success"] or row["sampled_env_steps"] == row["env_steps"]


class MilestoneReward(RewardStandIn):
    """The stand-in reward, paying the milestone ``checked`` for a click at x = 999."""

    async def reward(self, request):
        out = await super().reward(request)
        a = request.action
        if a is not None and a.coordinate is not None and a.coordinate[0] == 999:
            out.milestones = ["checked"]
        return out


async def test_the_pilot_counts_the_steps_before_the_first_hit_as_tries():
    """Issue 47, defect 5: the pilot learned the milestone order from first appearance, so no step
    before the first hit counted as a try: one hit at the last of 12 steps read as 1/1, not 1/12 (the
    1.2 % per step behind the pre-registered predictions was about 0.6 %)."""
    job = job_for(kind="train_episode_group", group_size=1, max_steps=4)
    # 3 episodes of 4 clicks each; only the very last click (the 12th request) hits the milestone
    policy = PolicyStandIn(lambda n, i: [click(999 if i == 11 else 100)])
    svc = services(policy=policy, reward=MilestoneReward())
    row = await _script().pilot_task(svc, job, 3, 48)
    assert row["mean_env_steps"] == 4.0 and len(policy.requests) == 12
    assert row["milestones"] == {"checked": {"hits": 1, "steps": 12}}
    # and a second milestone is tried only once the first was reached in that episode
    order, hits, tries = _script().milestone_rates([[[], ["a"], [], ["b"]], [[], [], [], []], [["a"], ["b"]]])
    assert order == ["a", "b"] and hits == {"a": 2, "b": 2} and tries == {"a": 7, "b": 3}


@pytest.mark.parametrize("policy, reproduced", [(rollout_succeeds, False), (root_succeeds, True)])
async def test_eval_search_reports_the_reproduced_paths_success(tmp_path, policy, reproduced):
    """Issue 47, defect 7: `halo eval --search` scored a search by `success_found`, a success anywhere
    in its tree or rollouts by the env's validator (pass@budget with a verifier), while the actions it
    reported were the best path's. Its success is now that path replayed from the task's start in a
    fresh session; the oracle's verdict is kept as `oracle_success_found`. With `rollout_succeeds` only
    rollouts succeed, so the returned path (clicks) fails when replayed; with `root_succeeds` the
    returned path is the root's success."""
    from halo_trainer.evaluation.matrix import play_search

    env = SnapshotEnv()
    settings = cfg(simulations=6, max_depth=3)
    job = job_for(kind="search", max_steps=3, mcts=settings)
    outcome, failures = await play_search(
        services(env=env, policy=PolicyStandIn(policy)), lambda attempt: job, tmp_path, 0
    )
    assert failures == 0
    assert outcome["success"] is reproduced
    assert outcome["oracle_success_found"] is True
    assert len(env.resets) == 2, "the search's root, then one fresh session for the replay"
    assert outcome["replay_steps"] == len(outcome["actions"]) > 0
    assert env.sessions == {}


def test_the_script_tests_the_paired_outcomes_with_mcnemar():
    rows = [
        {"mcts_success": True, "sampled_success": False},
        {"mcts_success": True, "sampled_success": False},
        {"mcts_success": True, "sampled_success": True},
        {"mcts_success": False, "sampled_success": False},
    ]
    assert _script().paired(rows) == {"search_only": 2, "sampling_only": 0, "mcnemar_p": 0.5}


async def test_the_neutral_critic_scores_every_child_one_half(tmp_path):
    result = await search(
        services(env=SnapshotEnv(), policy=PolicyStandIn(distinct_clicks)),
        job_for(),
        cfg(simulations=1, critic="neutral", max_children=4),
        tmp_path,
    )
    assert [n.q_critic for n in result.tree.children(0)] == [0.5, 0.5, 0.5]


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
    """Issue 47, defect 3: K = max_children bounded a node's children, so once a one-action task's
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


@pytest.mark.parametrize("rollout_nodes, kept", [("none", 0), ("milestone", 2), ("all", 3)])
async def test_rollout_steps_that_pay_a_milestone_become_nodes(tmp_path, rollout_nodes, kept):
    """Issue 47, item 2 (``rollout_nodes``): a rollout's states were scored and backed up but never
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
