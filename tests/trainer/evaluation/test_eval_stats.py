"""Evaluation numbers on hand-made outcomes: task sampling, Wilson intervals, the exact paired test, the summary."""

from __future__ import annotations

import math

import pytest

from halo_trainer.evaluation.matrix import agisdk_results, parser, read_records, run, summarise
from halo_trainer.evaluation.pool import episode_seeds, sample_tasks
from halo_trainer.evaluation.report import markdown
from halo_trainer.evaluation.stats import exact_mcnemar, mode_summary, paired_test, pass_hat_k, rate


def _rec(mode, task, seed, success, *, scored=True, steps=2, valid=2, ret=0.5, infra=0):
    site = task.split(".", 1)[-1].rsplit("-", 1)[0]
    return {
        "mode": mode,
        "task": task,
        "seed": seed,
        "site": site,
        "scored": scored,
        "success": success if scored else None,
        "steps": steps if scored else 0,
        "valid_actions": valid if scored else 0,
        "return": ret if scored else None,
        "infra_failures": infra,
    }


def test_task_sampling_is_deterministic_in_the_seed_and_ignores_the_pool_order():
    pool = [f"v2.gomail-{i}" for i in range(40)]
    first = sample_tasks(pool, 30, 42)
    assert first == sample_tasks(list(reversed(pool)), 30, 42)
    assert len(first) == 30 and len(set(first)) == 30
    assert sample_tasks(pool, 30, 43) != first
    assert sample_tasks(pool, 100, 42) == sorted(pool)
    assert episode_seeds(42, 3) == episode_seeds(42, 3) and len(set(episode_seeds(42, 3))) == 3


def test_wilson_interval_on_known_values():
    r = rate(8, 10)
    # 8/10 at 95%: 0.4902 .. 0.9433 (Wilson 1927; the usual tables)
    assert r["rate"] == 0.8
    assert r["ci_low"] == pytest.approx(0.4902, abs=1e-3) and r["ci_high"] == pytest.approx(0.9433, abs=1e-3)
    zero = rate(0, 30)
    assert zero["ci_low"] == 0.0 and zero["ci_high"] == pytest.approx(0.1135, abs=1e-3)
    # 0/11 came out 2.8e-17 in floats, a negative lower whisker the chart refused
    assert all(rate(0, n)["ci_low"] == 0.0 and rate(n, n)["ci_high"] == 1.0 for n in range(1, 200))


def test_exact_mcnemar_against_the_binomial_by_hand():
    assert exact_mcnemar(0, 0) == 1.0
    assert exact_mcnemar(6, 0) == pytest.approx(2 / 64)  # 2 * 0.5^6
    assert exact_mcnemar(0, 6) == exact_mcnemar(6, 0)
    assert exact_mcnemar(5, 1) == pytest.approx(2 * (1 + 6) / 64)
    assert exact_mcnemar(3, 3) == 1.0
    assert exact_mcnemar(10, 2) == pytest.approx(2 * sum(math.comb(12, i) for i in range(3)) / 4096)


def test_the_paired_test_counts_only_pairs_both_modes_scored():
    a = [_rec("A", "local.x-1", s, True) for s in range(6)] + [_rec("A", "local.x-2", 0, False)]
    b = [_rec("B", "local.x-1", s, s == 0) for s in range(6)] + [_rec("B", "local.x-2", 0, None, scored=False)]
    t = paired_test(a, b)
    assert (t["pairs"], t["only_a"], t["only_b"], t["both"], t["neither"]) == (6, 5, 0, 1, 0)
    assert t["p_value"] == pytest.approx(2 / 32)


def test_the_summary_keeps_infrastructure_failures_apart():
    records = [
        _rec("A", "local.playground-1", 1, True, steps=1, valid=1, ret=1.0, infra=1),
        _rec("A", "local.playground-2", 1, False, steps=3, valid=2, ret=0.0),
        _rec("A", "local.gomail-1", 1, False, steps=5, valid=5, ret=0.2),
        _rec("A", "local.gomail-2", 1, None, scored=False, infra=3),
    ]
    s = mode_summary(records)
    assert (s["successes"], s["n"]) == (1, 3)  # the unscored episode is not a failure
    assert s["sites"]["playground"]["n"] == 2 and s["sites"]["gomail"]["successes"] == 0
    assert s["mean_return"] == pytest.approx(0.4)
    assert s["median_steps"] == 3
    assert s["action_validity"] == pytest.approx(8 / 9)
    assert (s["infra_failures"], s["unscored_episodes"]) == (4, 1)
    plan = {"modes": ["A", "B"], "episodes_per_mode": 4}
    results = summarise("e1", plan, records + [_rec("B", "local.playground-1", 1, False)])
    assert results["paired"][0]["pairs"] == 1
    table = markdown(results)
    assert "| `A` | 33% (6%-79%), 1/3 | k=1: 33% (6%-79%), 1/3 |" in table and "exact McNemar" in table


def test_pass_hat_k_needs_every_seed_of_a_task():
    records = [_rec("A", "local.x-1", s, True) for s in range(3)]  # all three seeds
    records += [_rec("A", "local.x-2", s, s != 1) for s in range(3)]  # one seed missed: pass@1 2/3, pass^k no
    records += [_rec("A", "local.x-3", s, True) for s in range(2)]  # only 2 of 3 scored: left out of pass^k
    p = pass_hat_k(records)
    assert (p["k"], p["successes"], p["n"]) == (3, 1, 2)
    s = mode_summary(records)
    assert (s["successes"], s["n"]) == (7, 8) and s["pass_hat_k"]["rate"] == 0.5
    assert (pass_hat_k([])["k"], pass_hat_k([])["n"]) == (0, 0)


def test_agisdk_results_have_the_harness_shape_and_reals_ids():
    plan = {"modes": ["A", "A+search"], "seeds": [7, 8], "max_steps": 15}
    records = [
        _rec("A", "real-offline.omnizon-3", 7, True) | {"elapsed_s": 4.5},
        _rec("A", "real-offline.omnizon-3", 8, False) | {"elapsed_s": 5.0},  # not the first seed: not kept
        _rec("A", "local.gomail-2", 7, None, scored=False, infra=3) | {"elapsed_s": 1.0},
        _rec("A+search", "real-offline.omnizon-3", 7, False) | {"elapsed_s": 9.0},
    ]
    out = agisdk_results(plan, records, {"A": "tiny-qwen3vl"})
    row = out["A"]["v2.omnizon-3"]
    assert row["cum_reward"] == 1 and row["n_steps"] == 2 and row["elapsed_time"] == 4.5 and row["seed"] == 7
    assert row["task_name"] == "v2.omnizon-3" and row["model_name"] == "tiny-qwen3vl" and row["max_steps"] == 15
    assert out["A"]["local.gomail-2"]["cum_reward"] == 0 and "infrastructure" in out["A"]["local.gomail-2"]["err_msg"]
    assert out["A+search"]["v2.omnizon-3"]["model_name"] == "tiny-qwen3vl"
    # agisdk's own tally: success is cum_reward == 1
    assert sum(r["cum_reward"] == 1 for r in out["A"].values()) == 1


def test_a_suite_with_its_own_task_selection_is_refused(capsys) -> None:
    args = parser().parse_args(["--modes", "qwen3vl_base", "--suite", "real-v2-offline", "--domain", "gomail"])
    assert run(args) == 2
    assert "--suite names its own tasks" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser().parse_args(["--modes", "qwen3vl_base", "--suite", "real-v2-everything"])


def test_a_line_cut_by_an_interruption_is_dropped_and_the_next_append_starts_clean(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text('{"mode": "A", "task": "t", "seed": 1}\n{"mode": "A", "ta')
    assert read_records(path) == [{"mode": "A", "task": "t", "seed": 1}]
    with path.open("a") as fh:
        fh.write('{"mode": "B", "task": "t", "seed": 1}\n')
    assert [r["mode"] for r in read_records(path)] == ["A", "B"]


def test_a_search_budget_below_one_step_is_a_clear_error(capsys) -> None:
    args = parser().parse_args(["--modes", "qwen3vl_base", "--search", "--search-budget", "0"])
    assert run(args) == 2  # refused before any service is called
    assert "error: --search-budget must be at least 1 env step" in capsys.readouterr().err


def test_a_searching_modes_summary_keeps_the_oracles_share_apart():
    # play_search's records: success is the returned path replayed, oracle_success_found the search's own
    searched = [
        _rec("m+search", "local.playground-1", 0, False) | {"oracle_success_found": True},
        _rec("m+search", "local.playground-2", 0, True) | {"oracle_success_found": True},
        _rec("m+search", "local.playground-3", 0, False) | {"oracle_success_found": False},
    ]
    summary = mode_summary(searched)
    assert summary["successes"] == 1 and summary["oracle_success_found"]["successes"] == 2
    assert "oracle_success_found" not in mode_summary([_rec("m", "local.playground-1", 0, True)])
