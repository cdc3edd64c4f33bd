"""Each tracker that installs logs a short run; its own reader gives back what metrics.jsonl holds."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
from PIL import Image

from halo_trainer.observe.metrics import MetricsLog
from halo_trainer.observe.trackers import PACKAGES, Trackers, missing, wandb_run_id

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
from tests.trainer.observe.test_trackers import write_run
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
        cwd=Path(__file__).resolve().parents[3],
    )
    (line,) = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    assert result["got"] == result["expected"] and result["expected"]
    assert result["config"]["learning_rate"] == 1e-6


def test_the_wandb_run_id_is_the_same_at_every_resume_and_one_wandb_takes() -> None:
    assert wandb_run_id("playground-20260101-120000-ab12") == "playground-20260101-120000-ab12"
    odd = "a run/with:odd#chars?" + "x" * 80
    assert wandb_run_id(odd) == wandb_run_id(odd) != wandb_run_id(odd + "y")
    assert len(wandb_run_id(odd)) <= 64 and set(wandb_run_id(odd)) <= set("abcdefghijklmnopqrstuvwxyz0123456789-_")
    with pytest.raises(ValueError, match="empty"):
        wandb_run_id("")


# One trainer process's session of a run: it logs two updates and an image, then dies without
# closing anything (kill -9; the pause lets the trackers' own background writers catch up, as they
# would have in a run that trained for minutes) or closes them as a finished run does.
RESUME_SESSION = """
import json, os, sys, time
from pathlib import Path
from PIL import Image
from halo_trainer.observe.trackers import Trackers
run_dir, names, session, crash = Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4] == "crash"
trackers = Trackers.open(names, run_dir, "trk-run", {"run_id": "trk-run", "learning_rate": 1e-6})
assert sorted(trackers.trackers) == sorted(names), trackers.trackers
for step in (2 * session - 1, 2 * session):
    trackers.log_metrics(step, {"train/loss": 1.0 / step})
trackers.log_images(2 * session, {"eval/episode": Image.new("RGB", (16, 8), (200, 10, 10))})
if crash:
    time.sleep(2)
    os._exit(0)
trackers.close()
if "trackio" in names:
    from trackio.sqlite_storage import SQLiteStorage
    records = SQLiteStorage.get_run_records("halo")
    steps = sorted({row["step"] for row in SQLiteStorage.get_logs("halo", "trk-run") if "train/loss" in row})
    print("TRACKIO", json.dumps({"runs": [r.get("name") or r.get("run_name") for r in records], "steps": steps}))
"""


@pytest.mark.slow
def test_a_resumed_run_continues_its_tracker_runs_inside_the_run_folder(tmp_path: Path) -> None:
    """Two sessions of one run (the first killed): one W&B run id, one MLflow run with every step,
    one trackio run; no file of the run outside its folder except trackio's process-wide store."""
    names = [n for n in ("tensorboard", "wandb", "mlflow", "trackio") if not missing([n])]
    if not {"wandb", "mlflow", "trackio"} & set(names):
        pytest.skip("none of wandb, mlflow, trackio is installed")
    home, store, run_dir = tmp_path / "home", tmp_path / "trackio", tmp_path / "run"
    home.mkdir()
    unset = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "HF_HOME", "MLFLOW_TRACKING_URI")
    env = {k: v for k, v in os.environ.items() if k not in unset and not k.startswith("WANDB_")}
    env |= {"HOME": str(home), "TRACKIO_DIR": str(store), "HF_HUB_OFFLINE": "1", "WANDB_SILENT": "true"}
    outputs = [
        subprocess.run(
            [sys.executable, "-c", RESUME_SESSION, str(run_dir), ",".join(names), str(session), how],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout
        for session, how in ((1, "crash"), (2, "close"))
    ]

    if "wandb" in names:
        sessions = sorted((run_dir / "wandb").glob("offline-run-*"))
        # W&B's offline format keeps one folder (one transaction log) per session; the id is one.
        assert len(sessions) == 2 and all(p.name.endswith("-trk-run") for p in sessions), sessions
        assert all((p / "run-trk-run.wandb").is_file() for p in sessions)
    if "mlflow" in names:
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=f"sqlite:///{run_dir / 'mlflow.db'}")
        (run,) = client.search_runs([client.get_experiment_by_name("halo").experiment_id])
        assert run.data.tags["halo_run_id"] == RUN and run.info.status == "FINISHED"
        assert [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")] == [1, 2, 3, 4]
    if "trackio" in names:
        (line,) = [x for x in outputs[1].splitlines() if x.startswith("TRACKIO ")]
        assert json.loads(line.removeprefix("TRACKIO ")) == {"runs": [RUN], "steps": [1, 2, 3, 4]}

    outside = sorted(
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob("*")
        if p.is_file() and not p.is_relative_to(run_dir) and not p.is_relative_to(store)
    )
    # What is left outside belongs to the process, not to the run: wandb-core's own debug log and
    # MLflow's telemetry switch.
    assert all(
        fnmatch(p, "home/.cache/wandb/logs/core-debug-*.log") or p == "home/.config/mlflow/telemetry.json"
        for p in outside
    ), outside


def test_report_to_comes_from_the_spec_else_the_run_defaults_and_none_stands_alone() -> None:
    from pydantic import ValidationError

    from halo.schemas import RunSpec
    from halo.settings.trainer import TrainerSettings
    from halo_trainer.config import load_defaults, resolve

    defaults = load_defaults(TrainerSettings().rl_config)
    tasks = ["local.playground-1"]
    assert resolve(RunSpec(domain="playground"), RUN, tasks, defaults, "tiny").report_to == ()  # [none]
    spec = RunSpec(domain="playground", report_to=["mlflow", "tensorboard", "mlflow"])
    assert resolve(spec, RUN, tasks, defaults, "tiny").report_to == ("mlflow", "tensorboard")
    with pytest.raises(ValidationError, match="'none' cannot be combined"):
        RunSpec(domain="playground", report_to=["none", "wandb"])
    with pytest.raises(ValidationError):
        RunSpec(domain="playground", report_to=["comet"])
