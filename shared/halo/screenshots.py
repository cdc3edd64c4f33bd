"""Content-addressed screenshot store on a shared folder (a Compose volume on the GPU box).

Screenshots are the largest thing in the system, so each PNG is written once under its sha256 and
only the hash travels through queues. The store outlives the browser session that made the image:
the learner reads it later, perhaps on another host that mounts the same volume.

Across machines without a shared folder, ``remote`` is the head's data store (``halo.store``): a
screenshot taken here is added to the head's as well, and one this folder lacks is fetched from the
head, checked against its hash, and kept (``screenshot_store`` picks the remote from the settings).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from halo.store.base import DataStore, screenshot_path


class ScreenshotStore:
    def __init__(self, root: Path, remote: DataStore | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.remote = remote

    def path(self, sha256: str) -> Path:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256[:80]!r}")
        return self.root / sha256[:2] / f"{sha256}.png"

    def _keep(self, digest: str, png: bytes) -> None:
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(png)
            os.replace(tmp, target)

    def put(self, png: bytes) -> str:
        """Store a PNG (atomically; a no-op when it is already there) and return its sha256."""
        digest = hashlib.sha256(png).hexdigest()
        self._keep(digest, png)
        if self.remote is not None:
            # Before the hash leaves this process: the learner may read it from the head at once.
            self.remote.write_new(screenshot_path(digest), png)
        return digest

    def get(self, sha256: str) -> bytes:
        """The PNG bytes; ``FileNotFoundError`` when unknown (here and, with a remote, on the head)."""
        try:
            return self.path(sha256).read_bytes()
        except FileNotFoundError:
            if self.remote is None:
                raise
        png = self.remote.read_bytes(screenshot_path(sha256))
        if hashlib.sha256(png).hexdigest() != sha256:
            raise FileNotFoundError(f"the head's copy of screenshot {sha256} does not hash to its name")
        self._keep(sha256, png)
        return png

    def exists(self, sha256: str) -> bool:
        """Whether the PNG is here; with a remote, one the head has is fetched first."""
        try:
            if self.path(sha256).exists():
                return True
        except ValueError:
            return False
        if self.remote is None:
            return False
        try:
            self.get(sha256)
        except FileNotFoundError:
            return False
        return True


def screenshot_store(root: Path) -> ScreenshotStore:
    """The screenshot store under ``root`` with the remote this process's ``HALO_STORE_*`` names
    (none for a shared filesystem: ``root`` is the shared folder itself)."""
    from halo.store import remote_store

    return ScreenshotStore(root, remote_store())
