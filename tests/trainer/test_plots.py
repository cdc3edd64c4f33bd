"""The learning-curve plot reads a run folder's JSON lines and writes a PNG (by update or by minute)."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pytest

from halo_trainer.plots import curve_figure, main, plot_run

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
