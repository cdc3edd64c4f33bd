"""One rollout job through in-process env, reward and policy stand-ins: groups, branch choice, faults.

The stand-ins (tests/trainer/stand_ins.py) speak the real clients' schema types; the real
services play the same jobs in tests/e2e.
"""

from __future__ import annotations

from halo.schemas import BranchPolicy, PolicyVersion
from halo_trainer.rollout.play import run_job
from tests.trainer.stand_ins import EnvStandIn, PolicyStandIn, RewardStandIn, click, job_for, services


async def test_a_step_group_forks_every_state_and_continues_from_the_sampled_candidate():
    env, reward = EnvStandIn(), RewardStandIn()
    job = job_for(group_size=3, max_steps=2, branch=BranchPolicy.SAMPLED)
    result = await run_job(services(env, reward=reward), job)

    assert result.infra_error is None
    # One fork of N-1 copies per state; candidate 0 runs in the session itself.
    assert [n for _, n in env.forks] == [2, 2]
    groups: dict[str, list] = {}
    for t in result.transitions:
        groups.setdefault(t.group_id, []).append(t)
    assert list(groups) == [f"{job.group_id}-s0", f"{job.group_id}-s1"]
    assert [[t.action.coordinate[0] for t in g] for g in groups.values()] == [[100, 200, 300]] * 2
    assert all(len({t.prompt.screenshot_sha256 for t in g}) == 1 for g in groups.values())  # one state each
    # The second step continues the first step's candidate 0: its reward requests name it as parent.
    second = [r for r in reward.requests if r.step == 1]
    assert {r.parent_transition_id for r in second} == {f"{job.job_id}-s0-c0"}
    [episode] = result.episodes
    assert episode.steps == 2 and episode.actions == [click(100).short()] * 2
    assert episode.episode_return == 0.1 + 0.1
    assert env.sessions == {}  # every fork and the kept session were closed


async def test_best_branch_continues_from_the_highest_reward_and_skips_a_branch_the_infrastructure_broke():
    env = EnvStandIn()
    env.fail_steps = {click(300).short()}  # the best candidate's browser crashes
    job = job_for(group_size=3, max_steps=2, branch=BranchPolicy.BEST)
    result = await run_job(services(env), job)

    step0 = [t for t in result.transitions if t.step == 0]
    assert [t.infra_error for t in step0] == [False, False, True]
    assert step0[2].reward.total == 0.0  # an infrastructure failure is never scored
    # x=300 broke, so the best usable branch is x=200 (candidate 1), and step 1 runs in its session.
    assert result.episodes[0].actions[0] == click(200).short()
    step1_sessions = {sid for sid, a in env.steps[3:]}
    fork_of_step0 = [sid for sid, a in env.steps[:3] if a == click(200).short()]
    assert fork_of_step0[0] in step1_sessions
    assert not result.episodes[0].infra_error


async def test_random_branch_is_reproducible_from_the_job_seed_and_not_always_the_first():
    chosen = []
    for seed in range(8):
        runs = [await run_job(services(), job_for(group_size=4, max_steps=1, seed=seed, branch=BranchPolicy.RANDOM))]
        runs.append(await run_job(services(), job_for(group_size=4, max_steps=1, seed=seed, branch="random")))
        a, b = (r.episodes[0].actions[0] for r in runs)
        assert a == b
        chosen.append(a)
    assert len(set(chosen)) > 1


async def test_an_episode_whose_every_branch_broke_ends_flagged_as_infrastructure():
    env = EnvStandIn()
    env.fail_steps = {click(100).short(), click(200).short()}
    result = await run_job(services(env), job_for(group_size=2, max_steps=3))
    assert len(result.transitions) == 2 and all(t.infra_error for t in result.transitions)
    assert result.episodes[0].infra_error and result.episodes[0].steps == 1
    assert env.sessions == {}


async def test_an_episode_group_plays_n_episodes_of_one_task_and_seed_and_credits_each_its_return():
    env = EnvStandIn()

    policy = PolicyStandIn(lambda n, i: [click(100 + 100 * (i % 3))])  # the episodes' steps interleave
    job = job_for(kind="train_episode_group", group_size=3, max_steps=2)
    result = await run_job(services(env, policy), job)

    assert env.resets == [(job.task_id, job.seed)] * 3 and env.forks == []
    assert all(r["n"] == 1 for r in policy.requests)
    assert len(result.episodes) == 3 and {t.group_id for t in result.transitions} == {job.group_id}
    for summary in result.episodes:
        mine = [t for t in result.transitions if t.episode_id == summary.episode_id]
        assert len(mine) == 2
        assert {t.episode_return for t in mine} == {summary.episode_return}
        assert summary.episode_return == sum(t.reward.total for t in mine)
    # Different samples per episode: the seeds sent to the policy differ between episodes.
    assert len({r["seed"] for r in policy.requests}) == 6


async def test_train_samples_read_the_current_version_every_step_and_eval_samples_use_the_jobs_version():
    versions = iter([1, 2, 3, 4])

    async def current(run_id: str) -> PolicyVersion:
        v = next(versions)
        return PolicyVersion(run_id=run_id, version=v, adapter_name=f"{run_id}-v{v}", created_at=0.0)

    policy = PolicyStandIn()
    train = await run_job(services(policy=policy, current=current), job_for(group_size=2, max_steps=2))
    assert [r["model"] for r in policy.requests] == ["run-a-v1", "run-a-v2"]
    assert [t.policy_version for t in train.transitions] == [1, 1, 2, 2]

    policy = PolicyStandIn()
    frozen = PolicyVersion(run_id="run-a", version=5, adapter_name="run-a-v5", created_at=0.0)
    job = job_for(kind="eval", policy=frozen)
    evaluation = await run_job(services(policy=policy, current=current), job)
    assert [r["model"] for r in policy.requests] == ["run-a-v5", "run-a-v5"]
    assert all(r["temperature"] == 0.0 for r in policy.requests)
    assert evaluation.purpose == "eval" and evaluation.episodes[0].purpose == "eval"


async def test_an_unparseable_candidate_is_scored_without_touching_the_browser():
    policy = PolicyStandIn(lambda n, i: [None, click(100)])
    env = EnvStandIn()
    result = await run_job(services(env, policy), job_for(group_size=2, max_steps=1))
    bad, good = result.transitions
    assert bad.action is None and bad.parse_error is not None and not bad.infra_error
    assert len(env.steps) == 1  # only the valid candidate was executed


async def test_a_failed_reset_is_an_infrastructure_result_with_nothing_to_learn():
    env = EnvStandIn()
    env.fail_resets = True
    result = await run_job(services(env), job_for())
    assert result.infra_error and "no browser context" in result.infra_error
    assert result.transitions == [] and result.episodes == []


async def test_a_job_whose_run_is_stopped_is_abandoned_before_its_next_step_and_closes_its_sessions():
    env = EnvStandIn()
    asked: list[int] = []

    async def stopped() -> bool:
        asked.append(1)
        return True

    result = await run_job(services(env), job_for(group_size=2, max_steps=5), stopped)
    assert result.infra_error and "was stopped" in result.infra_error
    assert len(asked) == 1 and len(env.steps) == 2  # step 0 was played, step 1 never started
    assert env.sessions == {}


async def test_a_job_draws_from_its_sampling_seed_when_it_has_one_whatever_its_task_seed():
    seeds = []
    for task_seed, sampling_seed in [(0, None), (1, None), (0, 40), (3, 40)]:
        policy = PolicyStandIn()
        await run_job(services(policy=policy), job_for(seed=task_seed, sampling_seed=sampling_seed, max_steps=1))
        seeds.append(policy.requests[0]["seed"])
    assert seeds[0] != seeds[1]  # no sampling seed: each task seed its own draws
    assert seeds[2] == seeds[3] != seeds[0]  # one sampling seed: the same draws on seeds 0 and 3
