"""The MCTS search on the Playground clone through the real env (Chromium), reward service and vLLM
serving the tiny model: exact re-entry of every kept state, and `halo eval --search`'s replay.
"""

from __future__ import annotations

import pytest

from halo.schemas import Snapshot
from halo_trainer.mcts.search import search
from halo_trainer.mcts.tree import load_tree
from tests.trainer.mcts.search_stand_ins import cfg
from tests.trainer.stand_ins import job_for


@pytest.fixture(scope="module")
def clone_services(vllm_server, tmp_path_factory):
    """The sites, env (Chromium) and reward service on free ports, and the session's vLLM (tiny model,
    tests/conftest.py): (env, reward, policy) URLs."""
    from halo.settings.sites import SitesSettings
    from halo_sites.app import create_app as create_sites
    from tests.conftest import free_port
    from tests.env.fixtures import EnvServer, ThreadServer, settings_for
    from tests.reward.conftest import drop_prefix, start_reward_service

    prefix = f"test:mcts:{free_port()}:"
    reward, reward_url = start_reward_service(prefix)
    port = free_port()
    try:
        with ThreadServer(create_sites(SitesSettings(host="127.0.0.1", port=port)), "127.0.0.1", port) as sites:
            settings = settings_for(tmp_path_factory.mktemp("env"), sites_url=sites.url)
            with EnvServer(settings) as env:
                yield env.url, reward_url, f"http://127.0.0.1:{vllm_server.port}"
    finally:
        reward.terminate()
        reward.wait(timeout=30)
        drop_prefix(prefix)


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
