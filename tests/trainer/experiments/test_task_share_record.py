"""experiments/task_share_record.py: shares, first and last windows and greedy counts from a run folder."""

from __future__ import annotations

import json

from tests.script_module import load_script


def test_shares_windows_and_evaluations(tmp_path):
    rec = load_script("experiments/task_share_record.py")
    run = tmp_path / "r"
    run.mkdir()
    run_cfg = {"run_id": "r", "seed": 0, "task_sampling": "signal", "tasks": ["a", "b"]}
    (run / "config.json").write_text(json.dumps({"run": run_cfg}))
    (run / "status.json").write_text(json.dumps({"state": "finished"}))
    train = [
        {"update": 1, "tasks": {"a": {"episodes": 3, "successes": 0}, "b": {"episodes": 1, "successes": 0}}},
        {"update": 2, "tasks": {"a": {"episodes": 2, "successes": 1}, "b": {"episodes": 2, "successes": 0}}},
        {"update": 3, "tasks": {"a": {"episodes": 3, "successes": 3}}},
    ]
    (run / "train_tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in train))
    evals = [{"update": 0, "tasks": {"a": {"episodes": 2, "successes": 0}}}, {"update": 3, "tasks": {}}]
    (run / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    out = rec.record(run, window=1)
    assert (out["updates"], out["training_episodes"], out["task_sampling"]) == (3, 11, "signal")
    a, b = out["tasks"]["a"], out["tasks"]["b"]
    assert (a["training_episodes"], a["share"], b["share"]) == (8, 0.727, 0.273)
    assert a["sampled_first_1_updates"]["successes"] == 0 and a["sampled_last_1_updates"]["successes"] == 3
    assert a["sampled_last_1_updates"]["wilson95"][0] > 0.4
    assert b["sampled_last_1_updates"] == {"successes": 0, "episodes": 0, "wilson95": [0.0, 1.0]}
    assert a["greedy_per_evaluation"] == [[0, 0, 2], [3, 0, 0]]


def test_reads_like_the_viewer_a_cut_line_and_bad_counts_skipped(tmp_path):
    """A run still writing (its last line cut) and a count the viewer would not use (successes above
    episodes) are left out, as the viewer's per-task table leaves them out."""
    rec = load_script("experiments/task_share_record.py")
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"run": {"tasks": ["a"], "seed": 0}}))
    (run / "status.json").write_text(json.dumps({"state": "running"}))
    good = {"update": 1, "tasks": {"a": {"episodes": 4, "successes": 1}}}
    bad = {"update": 2, "tasks": {"a": {"episodes": 1, "successes": 3}}}
    (run / "train_tasks.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + '\n{"update": 3, "tas')
    (run / "eval.jsonl").write_text("")
    out = rec.record(run, window=5)
    assert (out["updates"], out["training_episodes"]) == (2, 4)
    assert out["tasks"]["a"]["sampled_last_5_updates"]["successes"] == 1
