"""The shared-filesystem backend: the head's data folder is mounted on this machine at the same
path (NFS, a cluster filesystem, or one machine). Nothing is copied; the probe proves the mount."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from halo.store.base import clean


class SharedFsStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def describe(self) -> str:
        return f"the data folder {self.root}"

    def path(self, rel: str) -> Path:
        return self.root / clean(rel)

    def read_bytes(self, rel: str) -> bytes:
        return self.path(rel).read_bytes()

    def exists(self, rel: str) -> bool:
        return self.path(rel).exists()

    def write_new(self, rel: str, data: bytes) -> None:
        target = self.path(rel)
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)

    def local_dir(self, rel: str) -> Path:
        folder = self.path(rel)
        if not folder.is_dir():
            raise FileNotFoundError(f"no folder {folder}")
        return folder
