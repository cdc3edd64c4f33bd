"""experiments/streak_learning_record.py: the learning comparison's measures from run folders."""

from __future__ import annotations

import json

import pytest

from tests.script_module import load_script


def _episode(purpose: str, update: int, paid: list[list[str]]) -> dict:
    """One episode whose steps' single candidates were paid ``paid[i]``."""
    steps = [{"step": i, "candidates": [{"milestones": m}]} for i, m in enumerate(paid)]
    return {"purpose": purpose, "update": update, "steps": steps}


def _run(tmp_path, name: str, algorithm: str, episodes: list[dict], metrics: list[dict], evals: list[dict]):
    run = tmp_path / name
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"run": {"algorithm": algorithm, "seed": 0}}))
    (run / "status.json").write_text(json.dumps({"created_at": 1000.0}))
    for file, lines in (("episodes.jsonl", episodes), ("metrics.jsonl", metrics), ("eval.jsonl", evals)):
        (run / file).write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"cut short')
    return run


def test_presses_stages_env_steps_and_the_pooled_last_evaluation(tmp_path):
    rec = load_script("experiments/streak_learning_record.py")
    train = [_episode("train", u, [["pressed_1"] if u == 4 else [], []]) for u in (1, 2, 3, 4)]
    greedy = [
        _episode("eval", 4, [["pressed_1"], ["pressed_2"], ["pressed_3"]]),
        _episode("eval", 4, [["pressed_1"], []]),
    ]
    metrics = [{"update": u, "rollout/transitions": 10.0} for u in (1, 2, 3, 4)]
    evals = [
        {"update": 0, "time": 1030.0, "eval/success_rate": 0.0, "eval/episodes": 2.0},
        {"update": 4, "time": 1600.0, "eval/success_rate": 0.5, "eval/episodes": 2.0},
    ]
    grpo = rec.record(_run(tmp_path, "g", "grpo", train + greedy, metrics, evals))
    # a miss and a press: 1 press in the last 3 updates' 6 actions, none in the first 3's
    assert grpo["sampled_presses_first"]["presses"] == 0 and grpo["sampled_presses_first"]["actions"] == 6
    assert (grpo["sampled_presses_last"]["presses"], grpo["sampled_presses_last"]["updates"]) == (1, [2, 3, 4])
    last = grpo["evaluations"][-1]
    assert (last["env_steps"], last["minutes"], last["successes"], last["episodes"]) == (40.0, 10.0, 1, 2)
    assert last["reached"] == {"pressed_1": 2, "pressed_2": 1, "pressed_3": 1}
    search_metrics = [
        {"update": 1, "mcts/env_steps": 48.0, "mcts/searches": 4.0, "mcts/success_found": 0.25, "dpo/pairs": 3}
    ]
    mcts = rec.record(_run(tmp_path, "m", "mcts", greedy, search_metrics, evals[:1]))
    assert mcts["pairs_per_iteration"] == [3] and mcts["searches_that_saw_a_success"] == [1]
    pooled = rec.pooled_last([grpo, mcts])
    assert pooled["grpo"]["successes"] == 1 and pooled["grpo"]["runs_at_or_above_half"] == 1
    assert pooled["mcts"] == pooled["mcts"] | {"successes": 0, "episodes": 2, "runs_reaching_pressed_1": 0}


def test_an_earlier_records_runs_are_kept_unless_a_folder_replaces_them_and_drawn(tmp_path, capsys):
    rec = load_script("experiments/streak_learning_record.py")
    evals = [
        {"update": 0, "time": 1030.0, "eval/success_rate": 0.0, "eval/episodes": 2.0},
        {"update": 2, "time": 1600.0, "eval/success_rate": 0.5, "eval/episodes": 2.0},
    ]
    metrics = [{"update": u, "mcts/env_steps": 48.0, "mcts/searches": 4.0} for u in (1, 2)]
    folder = _run(tmp_path, "m-new", "mcts", [], metrics, evals)

    def earlier(run_id: str, algorithm: str, seed: int, successes: int) -> dict:
        """A run recorded from a folder that is gone since (its rounds at 0 and 2)."""
        rounds = [evals[0], evals[1] | {"eval/success_rate": successes / 2}]
        steps = "mcts/env_steps" if algorithm == "mcts" else "rollout/transitions"
        gone = rec.record(_run(tmp_path, run_id, algorithm, [], [{"update": 1, steps: 48.0}], rounds))
        return gone | {"seed": seed}

    # the folder's run is mcts seed 0: it replaces the earlier mcts seed 0 and keeps the other two
    old = [earlier("m-old", "mcts", 0, 0), earlier("m-s1", "mcts", 1, 2), earlier("g-s0", "grpo", 0, 2)]
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"runs": old}))
    out, png = tmp_path / "out.json", tmp_path / "methods.png"
    rec.main([str(folder), "--keep", str(record), "--out", str(out), "--plot", str(png)])
    written = json.loads(out.read_text())
    assert [r["run_id"] for r in written["runs"]] == ["g-s0", "m-new", "m-s1"]
    assert (
        written["pooled_at_last_evaluation"]["mcts"] | {"successes": 3, "episodes": 4}
        == (written["pooled_at_last_evaluation"]["mcts"])
    )
    assert png.read_bytes().startswith(b"\x89PNG")
    printed = capsys.readouterr().out
    assert "kept from" in printed and "m-old" not in printed.split("kept from")[1].splitlines()[0]
    # the figure pools the record's rounds as the folders' figure would: mcts 1/4 then 3/4
    fig = rec.draw_methods(rec.rounds(written["runs"]), "held-out success (greedy)")
    pooled = {line.get_label().split(":")[0]: line for line in fig.axes[0].get_lines() if line.get_label()[0] != "_"}
    assert list(pooled["mcts"].get_ydata()) == [0.0, 0.75] and list(pooled["mcts"].get_xdata()) == [0.0, 72.0]


def test_a_keep_file_that_is_not_a_record_is_refused(tmp_path, capsys):
    rec = load_script("experiments/streak_learning_record.py")
    folder = _run(tmp_path, "g", "grpo", [], [], [])
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(SystemExit) as exit_:
        rec.main([str(folder), "--keep", str(tmp_path / "bad.json")])
    assert exit_.value.code == 2 and "not a record this script wrote" in capsys.readouterr().err


def test_tree_focus_counts_stages_paid_and_what_the_search_did_below_them(tmp_path):
    from tests.trainer.mcts.hand_made_trees import child, new_tree

    rec = load_script("experiments/streak_learning_record.py")
    trees = tmp_path / "trees"
    trees.mkdir()
    # job 0: a press (0.6) with a second press (0.4) and a step without one below it; a miss (-0.9);
    # a step that paid nothing (0.1) but had a rollout's success backed up below it
    tree = new_tree()
    press, miss, lucky = (
        child(tree, 0, x, q_critic=q, reward=r) for x, q, r in ((1, 0.3, 0.6), (2, 0.0, -0.9), (3, 0.0, 0.1))
    )
    second, other = (child(tree, press, x, q_critic=q, reward=r) for x, q, r in ((4, 0.3, 0.4), (5, 0.0, 0.1)))
    for node, value in ((second, 0.0), (other, 0.0), (miss, 0.0), (lucky, 1.0)):
        tree.backup(node, value)
    tree.save(trees).rename(trees / "run-1-j0.json")
    # job 4 (the second iteration): valid + novelty (0.3) is not a stage
    quiet = new_tree()
    quiet.backup(child(quiet, 0, 1, q_critic=0.0, reward=0.3), 0.0)
    quiet.save(trees).rename(trees / "run-1-j4.json")
    focus = rec.tree_focus(trees, theta=0.1, searches_per_iteration=4)
    assert focus == focus | {
        "searches": 2,
        "with_a_stage": 1,
        "steps_that_paid_a_stage": 2,
        "of_them_below_another": 1,
        "nodes_below_the_first": 2,
        "root_visits_through_it": [0.5],
    }
    # the lucky step (0.5 x 1) is chosen over the press (0.5 x 0.3) and the miss: 2 of the pairs
    # choose a step that paid no stage; the press over the miss, and the second press over its sibling
    assert (focus["pairs_per_iteration"], focus["pairs_chosen_without_a_stage"]) == ([4, 0], [2, 0])
