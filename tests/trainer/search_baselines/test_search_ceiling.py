"""The search-ceiling comparison's arms (halo_trainer.search_baselines.arms) and its script
(experiments/search_ceiling.py) on the in-process stand-ins: every arm spends the same budget
unless it succeeded, and successes seen and reproduced are kept apart."""

from __future__ import annotations

import pytest

from halo.schemas.search_settings import MCTSConfig
from halo_trainer.search_baselines.arms import go_explore_arm, mcts_arm, paired, sampling_arm, spent_or_succeeded
from tests.script_module import load_script
from tests.trainer.search_baselines.test_go_explore import PRESS, SUCCESS, MilestoneReward, SnapshotEnv
from tests.trainer.stand_ins import PolicyStandIn, click, job_for, services


def job():
    return job_for(kind="train_episode_group", group_size=1, max_steps=6)


def distinct_clicks(n: int, i: int):
    """Never a success: a new click every time, a press now and then."""
    return [PRESS if (i + k) % 7 == 0 else click(100 + (i * 8 + k) % 800) for k in range(n)]


@pytest.mark.parametrize("widening", [0.5, 0.0])
async def test_no_arm_returns_with_its_budget_unspent_except_by_success(tmp_path, widening):
    """Sampling, Go-Explore and MCTS (two of its ablations) at E = 48 on one seed."""
    svc = services(env=SnapshotEnv(), policy=PolicyStandIn(distinct_clicks), reward=MilestoneReward())
    base = {"simulations": 10_000, "env_step_budget": 48, "max_children": 8, "max_depth": 6, "critic": "progress"}
    rows = [
        await sampling_arm(svc, job(), 48),
        await go_explore_arm(svc, job(), 48, tmp_path),
        await mcts_arm(svc, job(), MCTSConfig(**base, widening=widening), tmp_path),
        await mcts_arm(
            svc, job(), MCTSConfig(**base, widening=widening, rollout_nodes="milestone"), tmp_path, "mcts_kept"
        ),
    ]
    assert [r["env_steps"] for r in rows] == [48] * 4
    assert all(spent_or_succeeded(r, 48) and not r["seen"] and not r["reproduced"] for r in rows)
    assert svc.env.sessions == {}
    # a search's tree is named relative to the run folder: rows are committed, a machine's paths not
    assert all(not r["tree"].startswith("/") and (tmp_path / r["tree"]).is_file() for r in rows[2:])


async def test_a_success_seen_is_kept_apart_from_one_the_returned_path_reproduces(tmp_path):
    """Go-Explore's path to its success replays to the success; a search whose only success was in
    a rollout saw one, but its most visited path does not reproduce it."""
    answers = {0: PRESS, 2: SUCCESS}
    svc = services(env=SnapshotEnv(), policy=PolicyStandIn(lambda n, i: [answers.get(i, click(100))] * n))
    row = await go_explore_arm(svc, job(), 48, tmp_path)
    assert row["seen"] and row["reproduced"] and row["env_steps"] == 3 and spent_or_succeeded(row, 48)

    def rollout_succeeds(n: int, i: int):  # the expansion clicks; the rollout after it succeeds
        return [click(100)] * n if n > 1 else [SUCCESS]

    svc = services(env=SnapshotEnv(), policy=PolicyStandIn(rollout_succeeds))
    settings = MCTSConfig(simulations=1, max_children=3, max_depth=3, critic="progress", widening=0.0)
    row = await mcts_arm(svc, job(), settings, tmp_path)
    assert row["seen"] and not row["reproduced"]


def test_paired_counts_discordant_seeds_per_key():
    rows = [
        {"task": "t", "seed": s, "arm": arm, "seen": ok, "reproduced": ok and arm == "sampling"}
        for s, outcomes in enumerate([(True, False), (True, False), (False, True), (False, False)])
        for arm, ok in zip(("go_explore", "sampling"), outcomes, strict=True)
    ]
    assert paired(rows, "go_explore", "sampling", "seen") == {
        "pairs": 4,
        "go_explore_only": 2,
        "sampling_only": 1,
        "mcnemar_p": 1.0,
    }
    assert paired(rows, "go_explore", "sampling", "reproduced")["sampling_only"] == 1


def test_an_mcts_arm_is_parsed_or_refused_clearly():
    parse = load_script("experiments/search_ceiling.py").parse_mcts_arm
    name, cfg = parse("mcts_kept:rollout_nodes=milestone,ucb_c=0.5", {"max_children": 8})
    assert name == "mcts_kept" and cfg.rollout_nodes.value == "milestone" and cfg.ucb_c == 0.5
    assert cfg.max_children == 8
    for bad, why in [("nocolon", "NAME:knob"), ("m:colour=red", "not knob=value"), ("m:ucb_c=-1", "ucb_c")]:
        with pytest.raises(ValueError, match=why):
            parse(bad, {})


def test_a_second_sitting_keeps_the_rows_of_the_first_and_refuses_other_settings(tmp_path, monkeypatch, capsys):
    """The pre-registered run takes hours: started again with the same --out and settings it runs
    only what it lacks; an --out of another budget is refused before any service is called."""
    import argparse
    import json
    import sys

    script = load_script("experiments/search_ceiling.py")
    args = argparse.Namespace(env_step_budget=120, max_depth=10, temperature=1.0)
    searches = {"mcts": MCTSConfig(env_step_budget=120, max_children=8)}
    fixed = script.settings_of(args, searches)
    out = tmp_path / "ceiling.json"
    assert script.rows_to_resume(str(out), fixed) == []
    rows = [{"task": "t", "seed": 0, "arm": "sampling", "seen": False}]
    out.write_text(json.dumps({**fixed, "rows": rows}))
    assert script.rows_to_resume(str(out), fixed) == rows
    with pytest.raises(ValueError, match="env_step_budget"):
        script.rows_to_resume(str(out), {**fixed, "env_step_budget": 60})
    argv = ["search_ceiling.py", "--task", "t", "--env_step_budget", "60", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stopped:
        script.main()
    assert stopped.value.code == 2 and "other settings" in capsys.readouterr().err
    out.write_text("not json")
    with pytest.raises(ValueError, match="not a results file"):
        script.rows_to_resume(str(out), fixed)
