"""The experiment trackers a run reports to (its ``report_to``): TensorBoard, W&B, trackio, MLflow.

Each tracker gets what metrics.jsonl gets, under the same names with the update index as its step
(finite values only: NaN there means "not measured this update"), the resolved config once, and at
every evaluation one episode of it as a filmstrip image. Every store works without a network:

- tensorboard: event files in ``<run>/tensorboard`` (``tensorboard --logdir <run>/tensorboard``)
- wandb: offline mode in ``<run>/wandb`` (``wandb sync <run>/wandb/offline-run-*`` uploads it later); wandb's own
  ``WANDB_MODE=online`` logs live instead
- trackio: its local database (``TRACKIO_DIR``, trackio's own setting), project ``halo``
- mlflow: a sqlite store ``<run>/mlflow.db`` with artifacts in ``<run>/mlartifacts``
  (``mlflow ui --backend-store-uri sqlite:///<run>/mlflow.db``), or mlflow's own
  ``MLFLOW_TRACKING_URI`` when set

A run that resumes (after a crash or a trainer restart) continues the same tracker run, so its
curves stay one series: W&B's run id is derived from the run id (``wandb_run_id``) and opened with
``resume="allow"``; in offline mode each process's session is its own ``offline-run-*-<id>``
folder under ``<run>/wandb`` (W&B's format: one transaction log per session), all with that id, and
``wandb sync`` uploads them into one W&B run in order. MLflow finds its run by the ``halo_run_id``
tag in the run folder's store; trackio by the run name (``resume="allow"``).

trackio is the exception to "every file in the run folder": it reads its store's folder once, when
it is first imported, into module constants, and has no per-run setting; one trainer process trains
many runs, so the store is process-wide (``TRACKIO_DIR``, by default in the Hugging Face cache).

Each library is imported only by the tracker that uses it, so a run reporting nowhere needs none.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import math
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from halo.screenshots import ScreenshotStore

logger = logging.getLogger("halo.trainer.trackers")

PROJECT = "halo"
# The module each tracker imports (its distribution on PyPI has the tracker's name).
PACKAGES = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio", "mlflow": "mlflow"}


class Tracker(Protocol):
    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None: ...

    def log_images(self, step: int, images: Mapping[str, Image.Image]) -> None: ...

    def close(self) -> None: ...


def missing(names: list[str]) -> list[str]:
    """The trackers among ``names`` whose library is not installed (checked before a run starts)."""
    return [n for n in names if n in PACKAGES and importlib.util.find_spec(PACKAGES[n]) is None]


WANDB_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def wandb_run_id(run_id: str) -> str:
    """The W&B run id of a run, the same at every resume: the run id itself when W&B accepts it
    (letters, digits, ``-``, ``_``; at most 64), else a readable prefix and a hash of the whole id."""
    if not run_id:
        raise ValueError("a tracker needs the run's id; it is empty")
    if WANDB_ID.match(run_id):
        return run_id
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:12]
    return f"{re.sub(r'[^A-Za-z0-9_-]', '-', run_id)[:51]}-{digest}"


def finite(metrics: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and math.isfinite(v)}


def flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"sampling": {"max_tokens": 8}}`` -> ``{"sampling.max_tokens": 8}``: trackers' parameter tables are flat."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        if isinstance(v, Mapping):
            out |= flat(v, f"{prefix}{k}.")
        else:
            out[f"{prefix}{k}"] = v if isinstance(v, int | float | str | bool) or v is None else json.dumps(v)
    return out


class TensorBoardTracker:
    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(run_dir / "tensorboard"))
        self.writer.add_text("config", "```json\n" + json.dumps(config, indent=1) + "\n```", 0)

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        for name, value in metrics.items():
            self.writer.add_scalar(name, value, step)
        self.writer.flush()

    def log_images(self, step: int, images: Mapping[str, Image.Image]) -> None:
        import numpy as np

        for name, image in images.items():
            self.writer.add_image(name, np.asarray(image.convert("RGB")), step, dataformats="HWC")
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any]) -> None:
        import wandb

        (run_dir / "wandb").mkdir(parents=True, exist_ok=True)
        self.wandb = wandb
        self.run = wandb.init(
            project=PROJECT,
            name=run_id,
            # One id per run, so that a resumed run continues the W&B run it started.
            id=wandb_run_id(run_id),
            resume="allow",
            dir=str(run_dir),
            config=config,
            # Offline unless wandb's own WANDB_MODE says otherwise: a GPU box may have no network.
            mode=os.environ.get("WANDB_MODE", "offline"),  # type: ignore[arg-type]
            settings=wandb.Settings(console="off", x_disable_stats=True, silent=True),
            reinit="create_new",
        )

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        self.run.log(dict(metrics), step=step)

    def log_images(self, step: int, images: Mapping[str, Image.Image]) -> None:
        self.run.log({name: self.wandb.Image(image) for name, image in images.items()}, step=step)

    def close(self) -> None:
        self.run.finish()


class TrackioTracker:
    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any]) -> None:
        import trackio

        self.trackio = trackio
        self.run = trackio.init(project=PROJECT, name=run_id, config=config, resume="allow", embed=False)

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        self.run.log(dict(metrics), step=step)

    def log_images(self, step: int, images: Mapping[str, Image.Image]) -> None:
        self.run.log({name: self.trackio.Image(image) for name, image in images.items()}, step=step)

    def close(self) -> None:
        self.run.finish()


class MlflowTracker:
    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any]) -> None:
        from mlflow import MlflowClient
        from mlflow.entities import Param

        # MLflow's file store refuses new runs since 3.x; its sqlite store is the local one.
        shared = os.environ.get("MLFLOW_TRACKING_URI")
        self.client = MlflowClient(tracking_uri=shared or f"sqlite:///{run_dir / 'mlflow.db'}")
        experiment = self.client.get_experiment_by_name(PROJECT)
        # A shared server keeps its own artifact root: the first run's folder must not become every run's.
        artifacts = None if shared else (run_dir / "mlartifacts").as_uri()
        experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(PROJECT, artifacts)
        # A resumed run continues its MLflow run (found by the tag), so its curves stay one series.
        if "'" in run_id or "\\" in run_id:
            raise ValueError(f"run id {run_id!r}: quotes and backslashes cannot be searched for in MLflow")
        found = self.client.search_runs([experiment_id], filter_string=f"tags.halo_run_id = '{run_id}'")
        if found:
            self.run_id = found[0].info.run_id
            if found[0].info.status != "RUNNING":  # closed by the session before: it is live again
                self.client.update_run(self.run_id, status="RUNNING")
            return
        self.run_id = self.client.create_run(experiment_id, run_name=run_id, tags={"halo_run_id": run_id}).info.run_id
        self.client.log_dict(self.run_id, config, "config.json")
        params = [Param(k, str(v)[:6000]) for k, v in flat(config).items()]
        for i in range(0, len(params), 100):  # MLflow takes at most 100 parameters a batch
            self.client.log_batch(self.run_id, params=params[i : i + 100])

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(name, value, now, step) for name, value in metrics.items()]
        for i in range(0, len(batch), 1000):
            self.client.log_batch(self.run_id, metrics=batch[i : i + 1000])

    def log_images(self, step: int, images: Mapping[str, Image.Image]) -> None:
        for name, image in images.items():
            self.client.log_image(self.run_id, image, key=name.replace("/", "_"), step=step)

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


TRACKERS: dict[str, type] = {
    "tensorboard": TensorBoardTracker,
    "wandb": WandbTracker,
    "trackio": TrackioTracker,
    "mlflow": MlflowTracker,
}


class Trackers:
    """All the trackers of one run, fed together. A tracker that fails mid-run is logged and dropped:
    the run's own files (metrics.jsonl, the checkpoints) matter more than any copy of them."""

    def __init__(self, trackers: dict[str, Tracker]) -> None:
        self.trackers = trackers

    @classmethod
    def open(cls, names: list[str], run_dir: Path, run_id: str, config: dict[str, Any]) -> Trackers:
        if absent := missing(names):
            raise RuntimeError(
                f"report_to names {absent} but their packages are not installed: pip install {' '.join(absent)}"
            )
        return cls({n: TRACKERS[n](Path(run_dir), run_id, config) for n in names if n in TRACKERS})

    def log_metrics(self, step: int, metrics: Mapping[str, Any]) -> None:
        self._each("log_metrics", step, finite(metrics))

    def log_images(self, step: int, images: Mapping[str, Image.Image]) -> None:
        if images:
            self._each("log_images", step, images)

    def log_episode(self, step: int, record: dict[str, Any], store: ScreenshotStore) -> None:
        """An episode record (``halo_trainer.observe.episode_log``) as one filmstrip image, ``eval/episode``."""
        from halo_trainer.observe.episode_log import (
            episode_image,  # torch comes with it; the API process imports this module
        )

        if self.trackers and (image := episode_image(record, store)) is not None:
            self._each("log_images", step, {"eval/episode": image})

    def close(self) -> None:
        self._each("close")
        self.trackers = {}

    def _each(self, method: str, *args: Any) -> None:
        for name, tracker in list(self.trackers.items()):
            try:
                getattr(tracker, method)(*args)
            except Exception:
                logger.exception("tracker %s failed in %s; it is dropped for the rest of the run", name, method)
                del self.trackers[name]
