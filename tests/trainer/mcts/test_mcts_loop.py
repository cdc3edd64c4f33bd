"""The MCTS + DPO run loop (halo_trainer.mcts.loop) on real Redis, the real learner and checkpoints.

The scripted worker answers each search job with a hand-made tree whose root prompt is the tiny
model's own rendering of a screenshot in the run's store (so the learner's prompt parity check
passes) and whose two children were valued 1 and 0: one preference pair per search. The real
search is tested in test_mcts_search*.py; here the loop's part: jobs, pairs, DPO, versions, acks.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from pydantic import ValidationError

from halo.policy_client import PolicyClient
from halo.schemas import RolloutJob, RolloutResult, RunSpec, SearchJob, SearchOutcome
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_model.inputs import prompt_inputs
from halo_model.loading import load_processor
from halo_trainer.config import load_defaults, resolve
from halo_trainer.loop_parts.parts import LoopStatus
from halo_trainer.mcts.jobs import run_search_job
from halo_trainer.mcts.loop import MctsLoop
from halo_trainer.mcts.tree import Tree
from tests.conftest import noise_png
from tests.trainer.loop_harness import (
    RUN,
    Killed,
    new_learner,
    published_job_ids,
    results_pending,
    run_with_worker,
    used_job_ids,
)
from tests.trainer.stand_ins import click, job_for, services

GOAL = "Click the OK button."


def mcts_loop(
    redis: aioredis.Redis,
    run_dir: Path,
    policy_url: str,
    base_model,
    processor,
    checkpoint_every: int = 1,
    prefetch_updates: int | None = None,
    **spec,
) -> MctsLoop:
    settings = TrainerSettings(outage_wait_s=60, job_claim_idle_s=30)
    run_spec = RunSpec(domain="playground", algorithm="mcts", eval_every=0, eval_episodes=0, **spec)
    cfg = resolve(run_spec, RUN, ["local.playground-1"], load_defaults(settings.rl_config), "tiny")
    # Hand-made completions are not tool calls: no grammar to replay for them.
    sampling = cfg.sampling.model_copy(update={"structured_outputs": "off"})
    cfg = cfg.model_copy(update={"sampling": sampling, "checkpoint_every": checkpoint_every})
    if prefetch_updates is not None:
        cfg = cfg.model_copy(update={"prefetch_updates": prefetch_updates})
    return MctsLoop(
        cfg,
        redis=redis,
        policy=PolicyClient(policy_url, "halo-base", max_retries=0),
        learner=new_learner(base_model),
        processor=processor,
        store=ScreenshotStore(run_dir.parent / "shots"),
        run_dir=run_dir,
        settings=settings,
    )


def hand_made_search(loop: MctsLoop, job: RolloutJob, shot: str, prompt_ids: list[int]) -> RolloutResult:
    """A search that tried two actions at the root: the first led to success (value 1), the second not."""
    tree = Tree.start(
        search_id=job.job_id,
        run_id=job.run_id,
        task_id=job.task_id,
        goal=GOAL,
        sampling=job.sampling,
        alpha=loop.search.alpha,
        ucb_c=loop.search.ucb_c,
        state_ref=None,
        url="http://site.test/",
        screenshot_sha256=shot,
    )
    tree.root.prompt_token_ids = prompt_ids
    for x, tokens, value in ((100, [10, 11, 12], 1.0), (200, [20, 21], 0.0)):
        child = tree.add_child(
            0,
            action=click(x),
            completion_token_ids=tokens,
            behaviour_logprobs=[-1.0] * len(tokens),
            screenshot_sha256=shot,
            q_critic=value,
        )
        tree.backup(child.id, value)
    path = tree.save(loop.parts.run_dir / "trees")
    return RolloutResult(
        job_id=job.job_id,
        run_id=job.run_id,
        purpose="search",
        policy_version=job.policy.version,
        search=SearchOutcome(tree_file=str(path), metrics=tree.summary()),
    )


@pytest.fixture(scope="module")
def processor(tiny_model_dir):
    return load_processor(tiny_model_dir)


async def test_search_trees_become_dpo_updates_and_new_adapter_versions(
    clean_redis, vllm_admin, base_model, processor, tmp_path
):
    redis = aioredis.from_url(clean_redis)
    loop = mcts_loop(
        redis, tmp_path / "run", vllm_admin.url, base_model, processor, episodes=4, jobs_per_update=2,
        reference="base", beta=1.0, simulations=7,
    )  # fmt: skip
    png = noise_png(64, 64, seed=1)
    shot = loop.parts.store.put(png)
    sampling = loop.cfg.sampling
    rendered = prompt_inputs(
        processor, GOAL, [], [png], viewport=sampling.viewport, history_limit=sampling.history_limit
    )
    prompt_ids = rendered["input_ids"][0].tolist()

    async def play(job: RolloutJob) -> RolloutResult:
        return hand_made_search(loop, job, shot, prompt_ids)

    outcome, seen = await run_with_worker(loop, play)

    assert outcome == "finished"
    # Every training job is a search carrying the run's settings; ids are GRPO's deterministic ones.
    assert [j.job_id for j in seen] == [f"{RUN}-j{i}" for i in range(4)]
    assert all(isinstance(j, SearchJob) and j.mcts == loop.search for j in seen)
    assert seen[0].mcts.simulations == 7 and seen[0].max_steps == loop.search.max_depth
    lines = [json.loads(line) for line in (loop.parts.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [line["update"] for line in lines] == [1, 2]
    first, second = lines
    # Two searches an iteration, one pair each; each iteration's DPO step made a new version.
    assert first["dpo/pairs"] == second["dpo/pairs"] == 2.0
    # The first action's value 1 was backed up: a success found, though no node is a terminal success.
    assert first["mcts/searches"] == 2.0 and first["mcts/nodes"] == 3.0 and first["mcts/success_found"] == 1.0
    assert math.isfinite(first["dpo/loss"]) and first["dpo/grad_norm"] > 0
    # Against the base reference: the untouched adapter scores both actions as the base does (margin 0,
    # loss log 2); after one step the chosen action's implicit reward is above the rejected one's.
    assert first["dpo/reward_margin"] == pytest.approx(0.0, abs=1e-5)
    assert first["dpo/loss"] == pytest.approx(math.log(2), abs=1e-4)
    assert second["dpo/reward_margin"] > 0 and second["dpo/reward_accuracy"] == 1.0
    assert loop.c.version == 2 and second["policy/version"] == 2.0
    assert {f"{RUN}-v1", f"{RUN}-v2"} <= set(vllm_admin.loads)
    assert (loop.parts.run_dir / "adapters" / "v2" / "adapter_model.safetensors").exists()
    # Exactly once: every search's result is in a checkpointed update and acknowledged.
    assert await used_job_ids(redis) == {j.job_id for j in seen}
    assert await results_pending(redis) == 0
    assert loop.status().episodes_done == 4
    await redis.aclose()


async def test_a_killed_mcts_run_resumes_at_its_checkpoint_and_uses_every_search_once(
    clean_redis, vllm_admin, base_model, processor, tmp_path
):
    redis = aioredis.from_url(clean_redis)
    run_dir = tmp_path / "run"
    png = noise_png(64, 64, seed=1)
    # Synchronous, so the searches the dead loop asked for are exactly those of its updates (with
    # prefetch it asks for the next iteration's too: tests/trainer/loop_parts/test_loop_routing.py's crash test).
    spec = {"episodes": 8, "jobs_per_update": 2, "checkpoint_every": 2, "prefetch_updates": 0}
    first = mcts_loop(redis, run_dir, vllm_admin.url, base_model, processor, **spec)
    shot = first.parts.store.put(png)
    sampling = first.cfg.sampling
    prompt_ids = prompt_inputs(
        processor, GOAL, [], [png], viewport=sampling.viewport, history_limit=sampling.history_limit
    )["input_ids"][0].tolist()

    async def report(status: LoopStatus) -> None:
        if status.updates == 3:  # learned from j4 and j5, not checkpointed: their results are unacknowledged
            raise Killed

    first.parts.status_cb = report
    with pytest.raises(Killed):
        await run_with_worker(first, lambda job: _search(first, job, shot, prompt_ids))
    assert await results_pending(redis) == 2 and len(await used_job_ids(redis)) == 4

    second = mcts_loop(redis, run_dir, vllm_admin.url, base_model, processor, **spec)
    outcome, seen = await run_with_worker(second, lambda job: _search(second, job, shot, prompt_ids))
    assert outcome == "finished"
    status = second.status()
    assert (status.updates, status.episodes_done, status.version) == (4, 8, 4)
    assert [j.job_id.rsplit("-", 1)[-1] for j in seen] == ["j6", "j7"]  # j4, j5 replayed from the pending list
    published = await published_job_ids(redis)
    assert len(published) == len(set(published)) == 8
    assert len(await used_job_ids(redis)) == 8 and await results_pending(redis) == 0
    assert f"{RUN}-v4" in vllm_admin.adapters
    await redis.aclose()


async def _search(loop: MctsLoop, job: RolloutJob, shot: str, prompt_ids: list[int]) -> RolloutResult:
    return hand_made_search(loop, job, shot, prompt_ids)


async def test_an_iteration_without_pairs_takes_no_step_and_keeps_the_version(
    clean_redis, vllm_admin, base_model, processor, tmp_path
):
    redis = aioredis.from_url(clean_redis)
    loop = mcts_loop(
        redis, tmp_path / "run", vllm_admin.url, base_model, processor, episodes=2, jobs_per_update=2,
        theta=5.0,
    )  # fmt: skip
    png = noise_png(64, 64, seed=1)
    shot = loop.parts.store.put(png)

    async def play(job: RolloutJob) -> RolloutResult:
        return hand_made_search(loop, job, shot, [1, 2, 3])  # never tokenised: no pair reaches the learner

    outcome, _ = await run_with_worker(loop, play)
    assert outcome == "finished"
    [line] = [json.loads(x) for x in (loop.parts.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert line["dpo/pairs"] == 0.0 and "dpo/loss" not in line
    assert loop.c.version == 0 and not vllm_admin.loads
    assert await results_pending(redis) == 0
    await redis.aclose()


async def test_a_search_job_the_search_cannot_run_comes_back_as_a_failure_not_a_crash(tmp_path):
    keyless = {"critic": "openai", "critic_api_key_env": "HALO_TEST_NO_SUCH_KEY"}
    result = await run_search_job(services(), job_for(kind="search", mcts=keyless), tmp_path)
    assert result.purpose == "search" and result.search is None
    assert "critic 'openai' needs an API key" in (result.infra_error or "")
    # A search job without its settings cannot be built, nor read from the job stream.
    with pytest.raises(ValidationError, match="mcts"):
        job_for(kind="search")


def test_mcts_settings_resolve_from_the_defaults_profile_and_request():
    defaults = load_defaults(TrainerSettings().rl_config)
    spec = RunSpec(domain="playground", algorithm="mcts", simulations=9, ucb_c=2.0, jobs_per_update=3)
    cfg = resolve(spec, "r", ["t"], defaults, "tiny")
    assert cfg.mcts is not None and cfg.jobs_per_update == 3
    assert (cfg.mcts.simulations, cfg.mcts.ucb_c, cfg.mcts.critic.value, cfg.mcts.max_depth) == (9, 2.0, "progress", 3)
    gpu = resolve(RunSpec(domain="playground", algorithm="mcts"), "r", ["t"], defaults, None)
    assert gpu.mcts.critic.value == "self" and gpu.jobs_per_update == defaults["run"]["jobs_per_update"]
    assert resolve(RunSpec(domain="playground"), "r", ["t"], defaults, "tiny").mcts is None
    with pytest.raises(ValueError, match="settings of algorithm 'mcts'"):
        RunSpec(domain="playground", beta=0.5)
