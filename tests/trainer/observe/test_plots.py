"""The learning-curve plot reads a run folder's JSON lines and writes a PNG (by update or by minute)."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pytest

from halo_trainer.observe.plots import (
    compare_figure,
    curve_figure,
    env_steps_by_update,
    main,
    methods_figure,
    milestone_rounds,
    plot_run,
    plot_runs,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _write_run(run_dir, created_at: float = 1000.0) -> None:
    run_dir.mkdir()
    (run_dir / "status.json").write_text(json.dumps({"created_at": created_at}))
    evals = [
        {"update": u, "time": created_at + 60 * u, "eval/success_rate": s, "eval/ci_low": 0.0, "eval/ci_high": 1.0,
         "eval/episodes": 4.0}
        for u, s in [(0, 0.0), (3, 0.5), (6, 1.0)]
    ]  # fmt: skip
    train = [
        {"update": u, "time": created_at + 60 * u, "rollout/mean_reward": 0.1 * u, "rollout/success_rate": 0.0}
        for u in range(1, 7)
    ]
    (run_dir / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in train))


def test_plot_run_writes_png_by_update_and_by_minute(tmp_path):
    run_dir = tmp_path / "run"
    _write_run(run_dir)
    by_update = plot_run(run_dir)
    assert by_update == run_dir / "curve.png"
    assert by_update.read_bytes().startswith(PNG_MAGIC)
    by_minute = plot_run(run_dir, out=tmp_path / "minutes.png", chance=0.25, minutes=True)
    assert by_minute.read_bytes().startswith(PNG_MAGIC)


def test_the_curve_plots_the_run_folders_values(tmp_path):
    run_dir = tmp_path / "run"
    _write_run(run_dir)
    fig = curve_figure(run_dir, chance=0.25)
    evaluation, rollouts = fig.axes
    success = evaluation.get_lines()[0]
    assert list(success.get_xdata()) == [0, 3, 6]
    assert list(success.get_ydata()) == [0.0, 0.5, 1.0]
    assert any(list(line.get_ydata()) == [0.25, 0.25] for line in evaluation.get_lines())  # the chance line
    assert "updates" in evaluation.get_xlabel()
    reward = rollouts.get_lines()[0]
    assert list(reward.get_xdata()) == [1, 2, 3, 4, 5, 6]
    assert list(reward.get_ydata()) == pytest.approx([0.1 * u for u in range(1, 7)])
    plt.close(fig)


def test_minutes_are_counted_from_the_runs_creation(tmp_path):
    run_dir = tmp_path / "run"
    _write_run(run_dir, created_at=1000.0)
    (run_dir / "status.json").write_text(json.dumps({"created_at": 1000.0 - 120}))  # created 2 min earlier
    fig = curve_figure(run_dir, minutes=True)
    assert "minutes" in fig.axes[0].get_xlabel()
    assert list(fig.axes[0].get_lines()[0].get_xdata()) == [2.0, 5.0, 8.0]
    plt.close(fig)


def test_plot_run_without_lines_returns_none(tmp_path):
    assert plot_run(tmp_path) is None


def test_cli_rejects_a_missing_run_folder(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "missing")])
    assert exc.value.code == 2
    assert "is not a run folder" in capsys.readouterr().err


def test_cli_writes_the_curve(tmp_path, capsys):
    run_dir = tmp_path / "run"
    _write_run(run_dir)
    main([str(run_dir), "--minutes", "--chance", "0.25"])
    assert capsys.readouterr().out.strip().endswith("curve.png")


def _name_algorithm(run_dir, algorithm: str) -> None:
    (run_dir / "config.json").write_text(json.dumps({"run": {"algorithm": algorithm}}))


def test_several_runs_share_one_plot_each_against_its_own_start(tmp_path):
    grpo, mcts = tmp_path / "grpo-run", tmp_path / "mcts-run"
    _write_run(grpo, created_at=1000.0)
    _write_run(mcts, created_at=5000.0)
    (mcts / "status.json").write_text(json.dumps({"created_at": 5000.0 - 60}))  # created a minute before its lines
    _name_algorithm(grpo, "grpo")
    _name_algorithm(mcts, "mcts")
    fig = compare_figure([grpo, mcts], chance=0.5, minutes=True)
    [ax] = fig.axes
    first, second, chance = ax.get_lines()
    assert list(first.get_xdata()) == [0.0, 3.0, 6.0] and list(second.get_xdata()) == [1.0, 4.0, 7.0]
    assert list(first.get_ydata()) == [0.0, 0.5, 1.0] == list(second.get_ydata())
    assert list(chance.get_ydata()) == [0.5, 0.5]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("grpo: grpo-run") and labels[1].startswith("mcts: mcts-run")
    assert "4 greedy episodes per point" in labels[0] and "minutes" in ax.get_xlabel()
    assert len(ax.collections) == 2  # one Wilson band per run
    plt.close(fig)


def test_a_run_without_evaluations_is_left_out_of_the_comparison(tmp_path):
    done, empty = tmp_path / "done", tmp_path / "empty"
    _write_run(done)
    empty.mkdir()
    fig = compare_figure([done, empty])
    assert len(fig.axes[0].get_lines()) == 1 and "updates" in fig.axes[0].get_xlabel()
    plt.close(fig)
    assert compare_figure([empty]) is None
    assert plot_runs([empty], tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()


def test_cli_compares_several_runs_into_the_given_file(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    _write_run(a)
    _write_run(b)
    out = tmp_path / "compare.png"
    main([str(a), str(b), "--minutes", "--out", str(out)])
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_cli_asks_for_out_with_several_runs(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    _write_run(a)
    _write_run(b)
    with pytest.raises(SystemExit) as exc:
        main([str(a), str(b)])
    assert exc.value.code == 2 and "--out" in capsys.readouterr().err


def _method_run(run_dir, algorithm: str, successes: list[int], steps_key: str, steps: float, created_at: float) -> None:
    """A run folder of ``algorithm`` whose evaluation at update 2k had ``successes[k]`` of 4 and whose
    every update took ``steps`` env steps (under ``steps_key``)."""
    run_dir.mkdir()
    (run_dir / "status.json").write_text(json.dumps({"created_at": created_at}))
    (run_dir / "config.json").write_text(json.dumps({"run": {"algorithm": algorithm}}))
    evals = [
        {"update": 2 * k, "time": created_at + 60 * 2 * k, "eval/success_rate": s / 4, "eval/episodes": 4.0}
        for k, s in enumerate(successes)
    ]
    train = [{"update": u, "time": created_at + 60 * u, steps_key: steps} for u in range(1, 2 * len(successes) - 1)]
    (run_dir / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in train))


def test_env_steps_count_searches_and_transitions_like_the_viewer():
    assert env_steps_by_update([{"update": 2, "mcts/env_steps": 24.0}, {"update": 1, "mcts/env_steps": 20.0}]) == {
        0: 0.0,
        1: 20.0,
        2: 44.0,
    }
    assert env_steps_by_update([{"update": 1, "rollout/transitions": 96.0}]) == {0: 0.0, 1: 96.0}


def test_methods_pool_each_algorithms_runs_with_wilson_bands(tmp_path):
    from halo_trainer.observe.metrics import wilson_interval

    _method_run(tmp_path / "g0", "grpo", [0, 1, 4], "rollout/transitions", 90.0, 1000.0)
    _method_run(tmp_path / "g1", "grpo", [0, 3, 2], "rollout/transitions", 96.0, 5000.0)
    _method_run(tmp_path / "m0", "mcts", [0, 0], "mcts/env_steps", 96.0, 9000.0)  # stopped after update 2
    _method_run(tmp_path / "m1", "mcts", [0, 2, 1], "mcts/env_steps", 96.0, 9900.0)
    fig = methods_figure([tmp_path / name for name in ("g0", "g1", "m0", "m1")])
    by_steps, by_minutes = fig.axes
    pooled = {line.get_label().split(":")[0]: line for line in by_steps.get_lines() if line.get_label()[0] != "_"}
    assert set(pooled) == {"grpo", "mcts"}
    # grpo: rounds 0, 2, 4 with 0/8, 4/8, 6/8; env steps the runs' mean (0, 186, 372)
    assert list(pooled["grpo"].get_ydata()) == [0.0, 0.5, 0.75]
    assert list(pooled["grpo"].get_xdata()) == pytest.approx([0.0, 186.0, 372.0])
    # mcts: round 4 is left out, one run never reached it; a round pools only runs that reached it
    assert list(pooled["mcts"].get_ydata()) == [0.0, 0.25]
    band = by_steps.collections[0].get_paths()[0].vertices[:, 1]
    low, high = wilson_interval(4, 8)
    assert min(abs(v - low) for v in band) < 1e-9 and min(abs(v - high) for v in band) < 1e-9
    minutes = [line for line in by_minutes.get_lines() if line.get_label().startswith("grpo")][0]
    assert list(minutes.get_xdata()) == pytest.approx([0.0, 2.0, 4.0])
    plt.close(fig)


def test_methods_plot_from_the_command_line(tmp_path, capsys):
    _method_run(tmp_path / "g0", "grpo", [0, 1], "rollout/transitions", 90.0, 1000.0)
    _method_run(tmp_path / "m0", "mcts", [0, 2], "mcts/env_steps", 96.0, 2000.0)
    out = tmp_path / "methods.png"
    main([str(tmp_path / "g0"), str(tmp_path / "m0"), "--methods", "--out", str(out)])
    assert out.read_bytes().startswith(PNG_MAGIC)
    assert str(out) in capsys.readouterr().out


def test_a_milestone_round_counts_the_greedy_episodes_that_reached_it(tmp_path):
    _method_run(tmp_path / "m0", "mcts", [0, 0], "mcts/env_steps", 96.0, 9000.0)

    def episode(update: int, purpose: str, milestones: list[list[str]]) -> dict:
        steps = [{"candidates": [{"milestones": m}]} for m in milestones]
        return {"purpose": purpose, "update": update, "steps": steps}

    records = [
        episode(0, "eval", [[], []]),
        episode(2, "eval", [["boxes_checked"], []]),
        episode(2, "eval", [[], ["submitted"]]),
        episode(2, "train", [["boxes_checked"]]),  # training episodes are not the held-out rounds
    ]
    (tmp_path / "m0" / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    evals = [json.loads(line) for line in (tmp_path / "m0" / "eval.jsonl").read_text().splitlines()]
    rounds = milestone_rounds(tmp_path / "m0", evals, "boxes_checked")
    assert [(r["update"], r["eval/success_rate"], r["eval/episodes"]) for r in rounds] == [(0, 0.0, 1.0), (2, 0.5, 2.0)]
    fig = methods_figure([tmp_path / "m0"], milestone="boxes_checked")
    assert "boxes_checked" in fig.axes[0].get_ylabel()
    plt.close(fig)


def test_drawn_rounds_leave_out_a_run_without_any():
    from halo_trainer.observe.plots import Round, draw_methods

    run = [Round(0, 0, 4, 0.0, 0.0), Round(2, 3, 4, 96.0, 5.0)]
    fig = draw_methods({"mcts": [run, []]}, "held-out success (greedy)")
    pooled = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("mcts")][0]
    assert list(pooled.get_ydata()) == [0.0, 0.75] and "1 runs" in pooled.get_label()
    plt.close(fig)
    assert draw_methods({"mcts": [[]]}, "held-out success (greedy)") is None
