"""Atomic checkpoints of the learner: a crash at any instant leaves the last complete one in force.

A checkpoint is a directory ``ckpt-<step>`` holding

* ``adapter/``: the LoRA adapter exactly as vLLM loads it (a resumed run can serve it directly),
* ``full_weights/``: only when the run trains base-model modules in full (``full_weights``): those
  parameters as safetensors in the learner's own dtype (``Learner.weights.save_base_weights(trained_only=True)``);
  a checkpoint without it comes from a LoRA-only run, and restoring it into a learner that trains full
  weights (or the other way round, or other modules) is refused,
* ``optimizer.pt``: AdamW's state and the learning-rate scheduler's, ``rng.pt``: Python, NumPy and
  torch (CPU and CUDA) random states,
* ``config.json``: the resolved run configuration, ``extra.json``: the caller's state (stream
  offsets, counters) that must move in lockstep with the weights,
* ``manifest.json``, written last: the step and the size and SHA-256 of every other file.

``save`` writes everything into a hidden temp directory, fsyncs each file and the directory,
renames it to ``ckpt-<step>``, fsyncs the parent, and only then replaces the ``latest`` pointer
file (temp file, fsync, ``os.replace``, fsync). ``latest`` is the commit point: a checkpoint it
does not name was never committed. ``load_latest`` trusts ``latest`` when the directory it names
verifies against its manifest, and otherwise falls back to the newest directory that does; temp
directories and directories without a valid manifest are never loaded. One writer per root.

A learner across ranks (``learner.ranks``) checkpoints with every rank calling ``save``: the adapter
and AdamW's state are gathered whole, rank 0 writes them in the one-process format and the others
return the checkpoint it committed; ``restore`` cuts each rank's shard from the whole tensors, so a
checkpoint resumes on any number of ranks (``halo_trainer.learner.distributed``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
import secrets
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from halo_trainer.learner import distributed
from halo_trainer.learner.learner import Learner

logger = logging.getLogger(__name__)

FORMAT = 1
LATEST = "latest"
MANIFEST = "manifest.json"
CKPT_RE = re.compile(r"^ckpt-(\d+)$")
TMP_PREFIX = ".tmp-ckpt-"
TRASH_PREFIX = ".trash-ckpt-"


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int
    created_at: float
    config: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def adapter_dir(self) -> Path:
        return self.path / "adapter"

    @property
    def full_weights_dir(self) -> Path:
        return self.path / "full_weights"

    def full_weight_names(self) -> list[str]:
        """The base-model parameters this checkpoint holds trained values of ([] for a LoRA-only run)."""
        from safetensors import safe_open

        names: list[str] = []
        for file in sorted(self.full_weights_dir.glob("*.safetensors")):
            with safe_open(str(file), "pt") as f:
                names.extend(f.keys())
        return sorted(names)


def _fsync_path(path: Path) -> None:
    """Flush a file's or a directory's entries to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_bytes(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _torch_save(path: Path, obj: Any) -> None:
    with open(path, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _point_latest(root: Path, name: str) -> None:
    """Atomically make ``latest`` name the checkpoint directory ``name`` (the commit point)."""
    tmp = root / f".{LATEST}.{secrets.token_hex(4)}.tmp"
    _write_bytes(tmp, (name + "\n").encode())
    os.replace(tmp, root / LATEST)
    _fsync_path(root)


def rng_state() -> dict[str, Any]:
    """Every random state a training step can draw from, in a form ``torch.load(weights_only=True)`` reads."""
    version, internal, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": [name, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _describe(full_weight_names: list[str]) -> str:
    if not full_weight_names:
        return "LoRA only"
    return f"LoRA and {len(full_weight_names)} full-weight parameters ({full_weight_names[0]}, ...)"


class CheckpointManager:
    """Saves and finds the checkpoints of one run under ``root`` (see the module docstring)."""

    def __init__(self, root: str | Path, keep: int = 3):
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self.root = Path(root)
        self.keep = keep

    def save(
        self, learner: Learner, *, config: Mapping[str, Any], extra: Mapping[str, Any] | None = None
    ) -> Checkpoint:
        """Write a checkpoint of the learner at ``learner.step`` and commit it; returns it."""
        # Serialise the caller's state first: a value JSON cannot hold fails before anything is written.
        config_json = json.dumps(config, sort_keys=True, indent=1).encode()
        extra_json = json.dumps(dict(extra or {}), sort_keys=True, indent=1).encode()
        step = learner.step
        if not learner.ranks.writes:
            return self._take_part(learner)
        self.root.mkdir(parents=True, exist_ok=True)
        self._remove_temp_dirs()
        tmp = self.root / f"{TMP_PREFIX}{step}-{secrets.token_hex(4)}"
        tmp.mkdir()

        learner.weights.save_adapter(tmp / "adapter")
        for path in (tmp / "adapter").iterdir():
            _fsync_path(path)
        _fsync_path(tmp / "adapter")
        if learner.weights.full_weight_names():
            learner.weights.save_base_weights(tmp / "full_weights", trained_only=True)
            for path in (tmp / "full_weights").iterdir():
                _fsync_path(path)
            _fsync_path(tmp / "full_weights")
        # Whole, in the one-process format: the checkpoint resumes on any number of ranks.
        optimizer = distributed.full_optimizer_state(learner.optimizer)
        _torch_save(tmp / "optimizer.pt", {"optimizer": optimizer, "scheduler": learner.scheduler.state_dict()})
        _torch_save(tmp / "rng.pt", rng_state())
        _write_bytes(tmp / "config.json", config_json)
        _write_bytes(tmp / "extra.json", extra_json)
        created_at = time.time()
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        manifest = {
            "format": FORMAT,
            "step": step,
            "created_at": created_at,
            "files": {str(p.relative_to(tmp)): {"size": p.stat().st_size, "sha256": _sha256(p)} for p in files},
        }
        _write_bytes(tmp / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
        _fsync_path(tmp)

        final = self.root / f"ckpt-{step}"
        if final.exists():
            # A leftover of a run that crashed before committing it, or a re-save of the same step:
            # move it aside rather than delete it, in case ``latest`` still names it.
            final.rename(self.root / f"{TRASH_PREFIX}{step}-{secrets.token_hex(4)}")
        tmp.rename(final)
        _fsync_path(self.root)
        _point_latest(self.root, final.name)
        logger.info("checkpoint %s committed (%d files)", final, len(files))
        self._prune(step)
        learner.ranks.barrier()  # the other ranks read the committed checkpoint back
        return Checkpoint(path=final, step=step, created_at=created_at, config=dict(config), extra=dict(extra or {}))

    def _take_part(self, learner: Learner) -> Checkpoint:
        """``save`` on a rank other than 0: the same gathers as rank 0's, in the same order, then the
        checkpoint rank 0 committed."""
        learner.weights.save_adapter(self.root / ".not-written")  # gathers; only rank 0 writes
        distributed.full_optimizer_state(learner.optimizer)
        learner.ranks.barrier()
        checkpoint = self._load(self.root / f"ckpt-{learner.step}")
        if checkpoint is None:
            raise RuntimeError(f"rank 0 did not commit {self.root / f'ckpt-{learner.step}'}")
        return checkpoint

    def load_latest(self) -> Checkpoint | None:
        """The committed checkpoint (``latest``), or the newest complete one if ``latest`` is unusable."""
        named = self._read_latest()
        if named is not None:
            checkpoint = self._load(self.root / named)
            if checkpoint is not None:
                return checkpoint
            logger.warning("'latest' names %s, which is missing or incomplete: looking for another", named)
        for step, path in sorted(self._checkpoint_dirs(), reverse=True):
            checkpoint = self._load(path)
            if checkpoint is not None:
                return checkpoint
            logger.warning("ignoring incomplete checkpoint %s (step %d)", path, step)
        return None

    def restore(self, learner: Learner, checkpoint: Checkpoint) -> None:
        """Put the learner (built with the same base model and config) and the RNGs back to the checkpoint.

        ValueError, learner untouched, when the checkpoint trained other full-weight modules."""
        saved, wanted = checkpoint.full_weight_names(), sorted(learner.weights.full_weight_names())
        if saved != wanted:
            raise ValueError(
                f"{checkpoint.path} trained {_describe(saved)}, this learner trains {_describe(wanted)} "
                f"(full_weights={list(learner.config.full_weights)}): resume it with the run's own full_weights"
            )
        learner.weights.load_adapter(checkpoint.adapter_dir)
        if saved:
            learner.weights.load_base_weights(checkpoint.full_weights_dir)
        state = torch.load(checkpoint.path / "optimizer.pt", map_location=learner.device, weights_only=True)
        distributed.load_optimizer_state(learner.optimizer, learner.params, state["optimizer"])
        learner.scheduler.load_state_dict(state["scheduler"])
        learner.step = checkpoint.step
        set_rng_state(torch.load(checkpoint.path / "rng.pt", weights_only=True))
        logger.info("restored %s at step %d", checkpoint.path, checkpoint.step)

    def resume(self, learner: Learner) -> Checkpoint | None:
        """``load_latest`` and ``restore`` in one: None (learner untouched) when there is nothing to resume."""
        checkpoint = self.load_latest()
        if checkpoint is not None:
            self.restore(learner, checkpoint)
        return checkpoint

    def complete(self) -> list[Checkpoint]:
        """Every complete checkpoint, oldest first."""
        found = (self._load(path) for _, path in sorted(self._checkpoint_dirs()))
        return [c for c in found if c is not None]

    # --- internals ---------------------------------------------------------------------------

    def _read_latest(self) -> str | None:
        try:
            name = (self.root / LATEST).read_text().strip()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        return name if CKPT_RE.match(name) else None

    def _checkpoint_dirs(self) -> list[tuple[int, Path]]:
        if not self.root.is_dir():
            return []
        out = []
        for path in self.root.iterdir():
            match = CKPT_RE.match(path.name)
            if match and path.is_dir():
                out.append((int(match.group(1)), path))
        return out

    def _load(self, path: Path) -> Checkpoint | None:
        """The checkpoint at ``path`` if its manifest is there and every file matches it."""
        try:
            manifest = json.loads((path / MANIFEST).read_text())
            for name, meta in manifest["files"].items():
                file = path / name
                if file.stat().st_size != meta["size"] or _sha256(file) != meta["sha256"]:
                    return None
            return Checkpoint(
                path=path,
                step=int(manifest["step"]),
                created_at=float(manifest["created_at"]),
                config=json.loads((path / "config.json").read_text()),
                extra=json.loads((path / "extra.json").read_text()),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _remove_temp_dirs(self) -> None:
        """Drop what crashed writers left: temp and trash directories and pointer files are never loaded."""
        for path in self.root.iterdir():
            if path.name.startswith((TMP_PREFIX, TRASH_PREFIX)) and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            elif path.name.startswith(f".{LATEST}.") and path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)

    def _prune(self, committed: int) -> None:
        """Keep the ``keep`` newest committed checkpoints; drop uncommitted ones past ``committed``."""
        self._remove_temp_dirs()
        dirs = sorted(self._checkpoint_dirs(), reverse=True)
        kept = 0
        for step, path in dirs:
            if step > committed:
                shutil.rmtree(path, ignore_errors=True)
            elif kept < self.keep:
                kept += 1
            else:
                shutil.rmtree(path, ignore_errors=True)
