"""The Go-Explore ceiling (halo_trainer.search_baselines.go_explore) on the in-process stand-ins,
whose env state is the list of actions taken, with snapshot and restore added here."""

from __future__ import annotations

import pytest

from halo.schemas import Action, ResetResponse, Snapshot, ValidationResult
from halo_trainer.search_baselines.go_explore import go_explore
from tests.trainer.stand_ins import EnvStandIn, PolicyStandIn, RewardStandIn, Session, click, job_for, services

SUCCESS = Action(action="terminate", status="success")
PRESS = click(999)  # the stand-in reward pays a milestone for it


class SnapshotEnv(EnvStandIn):
    """A snapshot is the action list; restore replays it. ``drift`` makes a restore of a state with
    that many actions show another screen."""

    def __init__(self, drift: int | None = None) -> None:
        super().__init__()
        self.drift = drift
        self.restores: list[tuple[str, ...]] = []  # the action list each restore re-entered

    async def snapshot(self, session_id: str) -> Snapshot:
        s = self.sessions[session_id]
        state = {"actions": list(s.actions), "seed": s.seed, "max_steps": s.max_steps}
        return Snapshot(task_id=s.task_id, url="http://site.test/", step=len(s.actions), storage_state=state)

    async def restore(self, snapshot: Snapshot) -> ResetResponse:
        st = snapshot.storage_state
        actions = list(st["actions"]) + (["drifted"] if len(st["actions"]) == self.drift else [])
        self.restores.append(tuple(st["actions"]))
        sid = self._new(Session(snapshot.task_id, st["seed"], st["max_steps"], actions))
        return ResetResponse(observation=self._observe(sid))

    async def validate(self, session_id: str) -> ValidationResult:
        return ValidationResult(task_id=self.sessions[session_id].task_id, success=False, reward=0.0)


class MilestoneReward(RewardStandIn):
    """Pays the milestone ``pressed`` for every click at x = 999."""

    async def reward(self, request):
        out = await super().reward(request)
        if request.action == PRESS:
            out.milestones = ["pressed"]
        return out


def job(max_steps: int = 6):
    return job_for(kind="train_episode_group", group_size=1, max_steps=max_steps)


@pytest.mark.parametrize("script", [lambda n, i: [click(100)], lambda n, i: [PRESS if i % 5 == 0 else click(100)]])
async def test_it_spends_its_whole_budget_unless_it_succeeds(tmp_path, script):
    """No arm returns with its budget unspent except by success."""
    env = SnapshotEnv()
    out = await go_explore(
        services(env=env, policy=PolicyStandIn(script), reward=MilestoneReward()), job(), 48, tmp_path
    )
    assert not out.success and out.env_steps == 48 == out.tries
    assert env.sessions == {}, "every session closed"


async def test_a_success_ends_it_early_with_the_path_that_reached_it(tmp_path):
    # presses at tries 2 and 4, the success at try 7; misses in between
    answers = {2: PRESS, 4: PRESS, 7: SUCCESS}
    policy = PolicyStandIn(lambda n, i: [answers.get(i, click(100))])
    env = SnapshotEnv()
    out = await go_explore(services(env=env, policy=policy, reward=MilestoneReward()), job(), 48, tmp_path)
    assert out.success and out.env_steps == 8
    assert out.path == [PRESS, PRESS, SUCCESS]
    assert env.sessions == {}


async def test_it_reenters_the_best_state_exactly_and_builds_on_it(tmp_path):
    answers = {1: PRESS, 3: PRESS}
    policy = PolicyStandIn(lambda n, i: [answers.get(i, click(100))])
    env, reward = SnapshotEnv(), MilestoneReward()
    out = await go_explore(services(env=env, policy=policy, reward=reward), job(), 6, tmp_path)
    press = PRESS.short()
    # tries 0-1 start from the root (a reset), 2-3 from the state after one press, 4-5 after two
    assert env.resets == [("local.playground-1", 7)] * 3  # the root at the start, then tries 0 and 1
    assert env.restores == [(press,), (press,), (press, press), (press, press)]
    assert out.reentries == 4 and out.reentry_mismatches == 0
    # each try's prompt history is its kept state's path: what a sampled episode there would show
    assert [r["history"] for r in policy.requests] == [[], [], [press], [press], [press, press], [press, press]]
    # the misses after a press never became part of a kept state: the env saw them in their own session
    assert [len(k.actions) for k in out.kept] == [0, 1, 2] and out.progress == 2
    assert out.path == [PRESS, PRESS] and not out.success
    # every try's reward was scored against the kept state's path (the reward service's memory)
    first, second = "run-a-j0-go-t1", "run-a-j0-go-t3"
    assert [r.parent_transition_id for r in reward.requests] == [None, None, first, first, second, second]


async def test_a_kept_state_that_shows_another_screen_is_dropped_and_the_budget_still_spent(tmp_path):
    policy = PolicyStandIn(lambda n, i: [PRESS if i == 0 else click(100)])
    env = SnapshotEnv(drift=1)  # the state after one press never comes back as it was
    out = await go_explore(services(env=env, policy=policy, reward=MilestoneReward()), job(), 10, tmp_path)
    assert out.reentry_mismatches == 1 and out.env_steps == 10
    assert [len(k.actions) for k in out.kept] == [0] and out.path == []
    assert env.sessions == {}


async def test_a_bad_budget_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="at least 1"):
        await go_explore(services(env=SnapshotEnv()), job(), 0, tmp_path)
