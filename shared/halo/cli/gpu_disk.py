"""Disk space before the model download: the weights into the Hugging Face cache, the rest onto Docker's disk.

The pre-flight runs before the model step (``make up``), in a container whose Hugging Face cache is the
``hf-cache`` volume and whose root file system is its writable layer, on Docker's data root: free
space at those two paths is what the download and the running containers will get. A full disk
used to show up as a download failing half-way or vLLM's compile cache failing to write.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3
# Written at run time besides the weights: vLLM's torch.compile and Triton caches in its container's
# layer, the trainer's checkpoints (adapter and AdamW state, 3 kept) and logs. An estimate, not a measure.
RUNTIME_GIB = 5.0
FIX = (
    "free space there (`docker system df` shows what Docker holds; `docker system prune` drops unused "
    "images and build cache) or move Docker's data-root (/etc/docker/daemon.json) to a larger disk"
)


@dataclass(frozen=True)
class DiskNeed:
    path: Path
    where: str  # what the path is, for the message
    gib: float
    what: str


def hub_cache() -> Path:
    """Where huggingface_hub downloads to here (HF_HUB_CACHE, HF_HOME or ~/.cache/huggingface/hub)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def cached_gib(cache: Path, model: str) -> float:
    """What the cache already holds of a Hub model (its blobs, a download cut short included)."""
    blobs = cache / f"models--{model.replace('/', '--')}" / "blobs"
    if not blobs.is_dir():
        return 0.0
    return sum(f.stat().st_size for f in blobs.iterdir() if f.is_file()) / GIB


def is_hub_name(model: str) -> bool:
    """A Hub repository name (downloaded by the model step), not a folder on a volume."""
    return bool(model) and not model.startswith((".", "/", "~")) and not os.path.isdir(model)


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check(needs: Sequence[DiskNeed]) -> tuple[list[str], list[str]]:
    """Notes and refusals: the needs on one file system (the volume is usually on Docker's disk) add up."""
    groups: dict[int, list[DiskNeed]] = {}
    for need in needs:
        groups.setdefault(os.stat(_existing(need.path)).st_dev, []).append(need)
    notes, refusals = [], []
    for group in groups.values():
        free = shutil.disk_usage(_existing(group[0].path)).free / GIB
        total = sum(n.gib for n in group)
        where = " and ".join(dict.fromkeys(f"{n.path} ({n.where})" for n in group))
        wanted = " + ".join(f"{n.gib:.1f} GiB {n.what}" for n in group)
        if free >= total:
            notes.append(f"disk: {free:.1f} GiB free at {where}, {total:.1f} GiB needed ({wanted})")
        else:
            refusals.append(
                f"{free:.1f} GiB free at {where}, but this stack needs {total:.1f} GiB there ({wanted}). Fix: {FIX}"
            )
    return notes, refusals
