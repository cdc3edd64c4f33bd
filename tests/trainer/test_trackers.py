"""Each tracker that installs logs a short run; its own reader gives back what metrics.jsonl holds."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from halo_trainer.metrics import MetricsLog
from halo_trainer.trackers import PACKAGES, Trackers, missing

RUN = "trk-run"
CONFIG = {"run_id": RUN, "learning_rate": 1e-6, "sampling": {"max_tokens": 64}, "report_to": ["tensorboard"]}
SEQUENCE = [
    {"rollout/mean_reward": 0.25, "train/loss": 1.5, "eval/success_rate": float("nan")},
    {"rollout/mean_reward": -0.125, "train/loss": 1.25, "eval/success_rate": 0.5},
    {"rollout/mean_reward": 0.75, "train/loss": 0.875, "eval/success_rate": float("nan")},
]


def write_run(run_dir: Path, name: str) -> dict[str, dict[int, float]]:
    """Log SEQUENCE through MetricsLog to one tracker; return metrics.jsonl's finite values by name and update."""
    trackers = Trackers.open([name], run_dir, RUN, CONFIG)
    log = MetricsLog(run_dir / "metrics.jsonl", trackers=trackers)
    for update, metrics in enumerate(SEQUENCE, start=1):
        log.write(update, update - 1, metrics, run_id=RUN)
    trackers.log_images(3, {"eval/episode": Image.new("RGB", (64, 32), (200, 10, 10))})
    trackers.close()
    expected: dict[str, dict[int, float]] = {}
    for line in log.read():
        for key, value in line.items():
            if key not in ("update", "time") and math.isfinite(value):
                expected.setdefault(key, {})[line["update"]] = value
    return expected


def needs(name: str) -> None:
    if missing([name]):
        pytest.skip(f"{name} is not installed")


def test_a_tracker_without_its_library_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PACKAGES, "mlflow", "halo_no_such_module")
    assert missing(["mlflow", "tensorboard", "none"]) == ["mlflow"] + missing(["tensorboard"])
    with pytest.raises(RuntimeError, match=r"report_to names \['mlflow'.*pip install mlflow"):
        Trackers.open(["mlflow"], tmp_path, RUN, CONFIG)


def test_tensorboard(tmp_path: Path) -> None:
    needs("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    expected = write_run(tmp_path, "tensorboard")
    acc = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    got = {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}
    assert set(got) == set(expected)
    for name, points in expected.items():
        assert got[name] == pytest.approx(points, rel=1e-6)  # event files hold float32
    assert [i.step for i in acc.Images("eval/episode")] == [3]
    assert "config" in " ".join(acc.Tags()["tensors"])


@pytest.mark.slow
def test_mlflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs("mlflow")
    from mlflow import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    expected = write_run(tmp_path, "mlflow")
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("halo").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.params["sampling.max_tokens"] == "64"
    for name, points in expected.items():
        assert {m.step: m.value for m in client.get_metric_history(run.info.run_id, name)} == points
    assert set(run.data.metrics) == set(expected)
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id)]
    assert "config.json" in artifacts and "images" in artifacts


@pytest.mark.slow
def test_wandb_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs("wandb")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    expected = write_run(tmp_path, "wandb")
    # wandb's own reader of an offline run's transaction log: one JSON record a line.
    wandb_cli = Path(sys.executable).parent / "wandb"
    out = subprocess.run(
        [str(wandb_cli), "leet", "inspect", "--json", str(tmp_path / "wandb")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    got: dict[str, dict[int, float]] = {}
    for record in records:
        if record["type"] == "history":
            step = int(record["history"]["step"]["num"])
            for key, value in record["history"]["item"].items():
                if not key.startswith(("_", "eval/episode.")) and isinstance(value, int | float):
                    got.setdefault(key, {})[step] = value
    assert got == expected
    (run,) = [r["run"] for r in records if r["type"] == "run"]
    assert run["config"]["update"]["sampling"] == {"max_tokens": 64}
    assert list((tmp_path / "wandb").glob("offline-run-*/files/media/images/eval/episode_3_*.png"))


TRACKIO_READBACK = """
import json, sys
from pathlib import Path
from tests.trainer.test_trackers import write_run
from trackio.sqlite_storage import SQLiteStorage
expected = write_run(Path(sys.argv[1]), "trackio")
logs = SQLiteStorage.get_logs("halo", "trk-run")
got = {}
for row in logs:
    for k, v in row.items():
        if k not in ("step", "timestamp") and isinstance(v, (int, float)):
            got.setdefault(k, {})[row["step"]] = v
print("RESULT", json.dumps({"expected": expected, "got": got, "config": SQLiteStorage.get_run_config("halo", "trk-run")}))
"""


@pytest.mark.slow
def test_trackio_local(tmp_path: Path) -> None:
    needs("trackio")
    # trackio reads its store's folder (TRACKIO_DIR) once, at import: a process of its own.
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", TRACKIO_READBACK, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    (line,) = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    assert result["got"] == result["expected"] and result["expected"]
    assert result["config"]["learning_rate"] == 1e-6


def test_report_to_comes_from_the_spec_else_the_run_defaults_and_none_stands_alone() -> None:
    from pydantic import ValidationError

    from halo.schemas import RunSpec
    from halo.settings.trainer import TrainerSettings
    from halo_trainer.config import load_defaults, resolve

    defaults = load_defaults(TrainerSettings().rl_config)
    tasks = ["local.playground-1"]
    assert resolve(RunSpec(domain="playground"), RUN, tasks, defaults, "tiny").report_to == []  # [none]
    spec = RunSpec(domain="playground", report_to=["mlflow", "tensorboard", "mlflow"])
    assert resolve(spec, RUN, tasks, defaults, "tiny").report_to == ["mlflow", "tensorboard"]
    with pytest.raises(ValidationError, match="'none' cannot be combined"):
        RunSpec(domain="playground", report_to=["none", "wandb"])
    with pytest.raises(ValidationError):
        RunSpec(domain="playground", report_to=["comet"])
