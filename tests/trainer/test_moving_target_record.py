"""scripts/moving_target_record.py: layouts, pairing and the pooled interval read from a run folder."""

from __future__ import annotations

import json

import pytest

from tests.script_module import load_script


@pytest.fixture(scope="module")
def rec():
    return load_script("scripts/moving_target_record.py")


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
    out = rec.record(run, block=2, last_evals=2)
    assert out["seed"] == 1 and out["updates"] == 2 and out["minutes"] == 2.0
    assert out["sampled_hits_per_layout"]["0-1"] == {"hits": [0, 1, 0, 1], "samples": [2, 2, 2, 2]}
    assert out["identical_candidates_across_groups"]["0-1"] == {"identical": 3, "of": 4}
    assert out["evaluations"][2]["per_layout"] == [0, 0, 1, 0]
    pooled = out["greedy_last_2_evaluations"]
    assert (pooled["successes"], pooled["n"]) == (6, 8) and pooled["wilson95"][0] > 0.25


def test_a_folder_without_a_run_is_refused_in_one_line(tmp_path, rec, capsys):
    assert rec.main([str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err
