"""The MCTS critics (halo_trainer.mcts.critics) and the typed search settings on a job.

Fast: the ranking grammar and parser, the search's neutral scores when its critic's endpoint is
down, the typed settings through a real Redis stream. Slow (vLLM serving the tiny model on the
CPU): the self critic's grammar-constrained ranking, and the openai critic with that vLLM as the
OpenAI-compatible endpoint and a dummy key, inside a whole search.
"""

from __future__ import annotations

import logging
import re

import pytest

from halo.openai_client import OpenAIChatClient
from halo.policy_client import Candidate, PolicyClient
from halo.queue import StreamQueue
from halo.schemas import Action, RewardBreakdown, RolloutJob, SearchJob
from halo.schemas.search_settings import MCTSConfig
from halo_trainer.mcts.critics import (
    CriticAnswerError,
    NodeView,
    OpenAICritic,
    SelfCritic,
    parse_ranking,
    ranking_regex,
)
from halo_trainer.mcts.search import search
from halo_trainer.rollout.play import Branch
from tests.conftest import free_port, noise_png
from tests.trainer.mcts.search_stand_ins import SUCCESS, SnapshotEnv, cfg
from tests.trainer.stand_ins import PolicyStandIn, click, job_for, services


class PngEnv(SnapshotEnv):
    """The snapshot stand-in env with real PNG screenshots (vLLM decodes them)."""

    async def screenshot(self, sha256: str) -> bytes:
        return noise_png(64, 48, int(sha256[:6], 16))


def three_ways(n: int, i: int) -> list[Action | None]:
    """At every expansion three distinct clicks and the success; rollouts click."""
    return [click(100), click(300), click(500), SUCCESS][:n] if n > 1 else [click(100)]


# --- the ranking -------------------------------------------------------------------------------------


def test_a_ranking_becomes_scores_by_rank():
    assert parse_ranking("Ranking: 2, 3, 1", 3) == [0.0, 1.0, 0.5]
    assert parse_ranking("ranking:3,1,2,4", 4) == [2 / 3, 1 / 3, 1.0, 0.0]
    # Repeats count once; numbers out of range are ignored; the unmentioned share the next rank.
    assert parse_ranking("Ranking: 2, 2, 9, 2", 3) == [0.5, 1.0, 0.5]
    assert parse_ranking("I think... Ranking: 1 > 2", 4) == [1.0, 2 / 3, 1 / 3, 1 / 3]
    for garbage in ("", "1, 2, 3", "Ranking: none", "Ranking: 0, 7", "ranking ohne zahlen"):
        with pytest.raises(CriticAnswerError, match="not a ranking of 3 actions"):
            parse_ranking(garbage, 3)


def test_the_grammar_admits_exactly_k_numbers_of_one_to_k():
    regex = re.compile(ranking_regex(3))
    for ok in ("Ranking: 1, 2, 3", "Ranking: 3, 3, 3"):
        assert regex.fullmatch(ok)
    for bad in ("Ranking: 1, 2", "Ranking: 1, 2, 4", "Ranking: 1, 2, 3, 1", "ranking: 1, 2, 3", "Ranking: 0, 1, 2"):
        assert not regex.fullmatch(bad), bad
    assert re.fullmatch(ranking_regex(12), "Ranking: " + ", ".join(str(i) for i in range(12, 0, -1)))


# --- failures do not stop a search ---------------------------------------------------------------------


async def test_a_critic_that_cannot_be_reached_gives_neutral_scores_and_is_counted(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HALO_TEST_CRITIC_KEY", "dummy")
    env = PngEnv()
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    settings = cfg(critic="openai", critic_base_url=dead, critic_api_key_env="HALO_TEST_CRITIC_KEY", max_children=4)
    with caplog.at_level(logging.WARNING, logger="halo.trainer.mcts"):
        result = await search(services(env=env, policy=PolicyStandIn(three_ways)), job_for(), settings, tmp_path)
    nodes = result.tree.record.nodes
    expanded = [n for n in nodes if n.children]
    assert len(expanded) >= 2 and result.tree.record.simulations == 6
    assert result.critic_failures == len(expanded) and result.metrics()["critic_failures"] == len(expanded)
    assert all(n.q_critic == 0.5 for n in nodes[1:])
    assert sum("critic failed" in r.getMessage() for r in caplog.records) == 1, "logged once per search"
    assert any(n.success for n in nodes), "the search went on and found the success"
    assert env.sessions == {}


# --- typed settings on the job --------------------------------------------------------------------------


async def test_search_settings_travel_typed_through_redis(aredis, key_prefix):
    settings = MCTSConfig(
        simulations=7, critic="openai", critic_model="gpt-4o-mini", critic_api_key_env="MY_KEY", dense_return=True
    )
    queue = StreamQueue(aredis, f"{key_prefix}:jobs", "workers", RolloutJob)
    await queue.publish(job_for(kind="search", mcts=settings))
    # A job written before the settings were typed (a plain dict of the same fields) still reads.
    await queue.publish(job_for(kind="search", mcts={"simulations": 3, "critic": "progress"}))
    first, old = [d.message for d in await queue.consume("w0", count=2)]
    assert isinstance(first, SearchJob) and isinstance(first.mcts, MCTSConfig) and first.mcts == settings
    assert old.mcts == MCTSConfig(simulations=3, critic="progress")
    # Bad settings never reach a worker: the job does not validate.
    with pytest.raises(ValueError, match="simulations"):
        job_for(kind="search", mcts={"simulations": 0})
    with pytest.raises(ValueError, match="critic_base_url"):
        job_for(kind="search", mcts={"critic_base_url": "file:///etc/passwd"})
    # The key never travels: only the name of the variable holding it.
    assert "MY_KEY" in first.model_dump_json() and 'api_key":' not in first.model_dump_json()


# --- on vLLM serving the tiny model -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def vllm_url(vllm_server):
    """The session's vLLM serving the tiny model (tests/conftest.py): a server of this module's own
    ran beside it and cost about 40 s to start."""
    return f"http://127.0.0.1:{vllm_server.port}"


def _branches(actions: list[Action | None]) -> list[Branch]:
    return [
        Branch(
            candidate=Candidate(
                index=i,
                text=a.short() if a else "no call",
                action=a,
                parse_error=None if a else {"reason": "no_tool_call", "detail": "no call"},
                token_ids=[],
                logprobs=[],
            ),
            session_id="s",
            step=None,
            reward=RewardBreakdown(transition_id=f"t{i}"),
            infra_error=False,
        )
        for i, a in enumerate(actions)
    ]


@pytest.mark.slow
@pytest.mark.vllm
async def test_the_self_critic_ranks_the_candidates_with_the_current_adapter(vllm_url):
    env = PngEnv()
    reset = await env.reset("local.playground-1")
    node = NodeView(job_for(), reset.observation, ["left_click(coordinate=[1, 2])"])
    actions = [click(100), None, click(300), click(500), SUCCESS]
    async with PolicyClient(vllm_url, "halo-base", timeout_s=300) as policy:
        critic = SelfCritic(services(env=env, policy=policy))
        scores = await critic.score(node, _branches(actions))
    # One request, constrained: a parseable ranking of the four actions; the unparsed answer scores 0.
    assert len(scores) == 5 and scores[1] == 0.0
    ranked = [scores[i] for i in (0, 2, 3, 4)]
    assert max(ranked) == 1.0 and all(s in (0.0, 1 / 3, 2 / 3, 1.0) for s in ranked)
    # A lone valid action needs no request, and the search never asks about an unparsed one.
    assert await critic.score(node, _branches([None, click(5)])) == [0.0, 1.0]


@pytest.mark.slow
@pytest.mark.vllm
async def test_the_openai_critic_asks_an_openai_compatible_endpoint_inside_a_search(vllm_url, tmp_path, monkeypatch):
    base_url = f"{vllm_url}/v1"
    env = PngEnv()
    reset = await env.reset("local.playground-1")
    node = NodeView(job_for(), reset.observation, [])
    client = OpenAIChatClient("dummy", "halo-base", base_url=base_url, timeout_s=300)
    critic = OpenAICritic(services(env=env), client)
    try:
        # The endpoint answers (a wrong request or a refused key would be a CallError): the random
        # model's unconstrained text is either a ranking or refused as not being one.
        try:
            scores = await critic.score(node, _branches([click(100), click(300), SUCCESS]))
            assert max(scores) == 1.0 and set(scores) <= {0.0, 0.5, 1.0}
        except CriticAnswerError as exc:
            assert "not a ranking of 3 actions" in str(exc)
    finally:
        await critic.aclose()

    # In a search: every expansion asks it once; answers that are no ranking score 0.5 and are counted.
    monkeypatch.setenv("HALO_TEST_CRITIC_KEY", "dummy")
    settings = cfg(
        critic="openai",
        critic_base_url=base_url,
        critic_model="halo-base",
        critic_api_key_env="HALO_TEST_CRITIC_KEY",
        simulations=3,
        max_children=4,
    )
    result = await search(services(env=PngEnv(), policy=PolicyStandIn(three_ways)), job_for(), settings, tmp_path)
    expanded = [n for n in result.tree.record.nodes if n.children]
    neutral = [n for n in expanded if all(result.tree.node(c).q_critic == 0.5 for c in n.children.values())]
    assert expanded and result.critic_failures == len(neutral)
    assert all(0.0 <= n.q_critic <= 1.0 for n in result.tree.record.nodes[1:])
