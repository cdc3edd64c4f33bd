"""experiments/moving_target_record.py: layouts, pairing and the pooled interval read from a run folder."""

from __future__ import annotations

import json

import pytest

from tests.script_module import load_script


@pytest.fixture(scope="module")
def rec():
    return load_script("experiments/moving_target_record.py")


def _episode(job_id: str, update: int, purpose: str, actions: list[str], hits: list[bool]) -> dict:
    cands = [{"action_text": a, "task_success": h} for a, h in zip(actions, hits, strict=True)]
    return {
        "job_id": job_id,
        "update": update,
        "purpose": purpose,
        "success": any(hits),
        "steps": [{"candidates": cands}],
    }


def test_layouts_pairing_and_the_pooled_interval(tmp_path, rec):
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"run": {"run_id": "r", "seed": 1, "learning_rate": 0.003}}))
    evals = [
        {"update": u, "time": 60.0 * u, "eval/success_rate": rate, "eval/episodes": 4.0}
        for u, rate in [(0, 0.0), (1, 0.5), (2, 1.0)]
    ]
    (run / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals) + '{"cut')
    eps = [
        # update 0: job 0 is layout 3 (seed 100003 % 4), job 1 layout 0; both drew the same 2 candidates
        _episode("r-j0", 0, "train", ["a", "b"], [True, False]),
        _episode("r-j1", 0, "train", ["a", "b"], [False, False]),
        # update 1: one candidate of two differs
        _episode("r-j2", 1, "train", ["a", "c"], [False, True]),
        _episode("r-j3", 1, "train", ["a", "d"], [False, False]),
        # a retried evaluation slot 2 still counts for layout 2
        _episode("r-eval1-x-2-r1", 2, "eval", ["e"], [True]),
        _episode("r-eval1-x-0", 2, "eval", ["e"], [False]),
    ]
    (run / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in eps))
    metrics = [
        {"update": 1, "train/entropy": 0.8, "train/seed_contrasted_fraction": 1.0, "train/loss": 3.0},
        {"update": 2, "train/entropy": 0.6, "train/seed_contrasted_fraction": 0.5},
        {"update": 3, "train/entropy": float("nan")},  # a skipped step's NaN is left out
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    out = rec.record(run, block=2, last_evals=2)
    assert out["train_metric_means"]["0-1"] == {"train/entropy": 0.7, "train/seed_contrasted_fraction": 0.75}
    assert "2-3" not in out["train_metric_means"]
    assert out["seed"] == 1 and out["updates"] == 2 and out["minutes"] == 2.0
    assert out["sampled_hits_per_layout"]["0-1"] == {"hits": [0, 1, 0, 1], "samples": [2, 2, 2, 2]}
    assert out["identical_candidates_across_groups"]["0-1"] == {"identical": 3, "of": 4}
    assert out["evaluations"][2]["per_layout"] == [0, 0, 1, 0]
    assert out["evaluations"][2]["answers"] == ["e", None, "e", None]  # the first greedy action per layout
    pooled = out["greedy_last_2_evaluations"]
    assert (pooled["successes"], pooled["n"]) == (6, 8) and pooled["wilson95"][0] > 0.25


def test_a_folder_without_a_run_is_refused_in_one_line(tmp_path, rec, capsys):
    assert rec.main([str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_pointer_clicks_measured_against_the_shown_layouts_button(tmp_path, rec):
    """Seed 0: job j is layout j % 4. Clicks on the shown layout's button read as nearest-own; the
    same click on every layout (a blind policy) is nearest-own on one layout of four; keys and
    right clicks are not pointer clicks."""
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"run": {"run_id": "r", "seed": 0, "learning_rate": 0.003}}))
    (run / "eval.jsonl").write_text("")
    # the 4 buttons' centres (320|960, 250|560 px) in Qwen3-VL's 0..1000 units of a 1280x720 page
    own = [[250, 347], [750, 347], [250, 778], [750, 778]]

    def ep(job: int, update: int, actions: list[dict]) -> dict:
        cands = [{"action_text": json.dumps(a), "action": a, "task_success": False} for a in actions]
        return {
            "job_id": f"r-j{job}",
            "update": update,
            "purpose": "train",
            "success": False,
            "steps": [{"candidates": cands}],
        }

    eps = [
        ep(j, 0, [{"action": "left_click", "coordinate": own[j]}, {"action": "key", "keys": ["Tab"]}]) for j in range(4)
    ]
    eps += [
        ep(
            4 + j,
            1,
            [{"action": "double_click", "coordinate": own[0]}, {"action": "right_click", "coordinate": own[0]}],
        )
        for j in range(4)
    ]
    (run / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in eps))
    clicks = rec.record(run, block=1, last_evals=1)["pointer_click_distance_px"]
    assert clicks["0-0"]["pointer_clicks"] == 4 and clicks["0-0"]["of"] == 8
    assert clicks["0-0"]["nearest_is_own_button"] == 4 and clicks["0-0"]["to_own_button"] < 1
    assert clicks["0-0"]["to_other_buttons"] > 400
    assert clicks["1-1"]["pointer_clicks"] == 4 and clicks["1-1"]["nearest_is_own_button"] == 1
    assert clicks["1-1"]["to_own_button"] == clicks["1-1"]["to_other_buttons"]  # blind: as near to all four
