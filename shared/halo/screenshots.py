"""Content-addressed screenshot store on a shared folder (a Compose volume on the GPU box).

Screenshots are the largest thing in the system, so each PNG is written once under its sha256 and
only the hash travels through queues. The store outlives the browser session that made the image:
the learner reads it later, perhaps on another host that mounts the same volume.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


class ScreenshotStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, sha256: str) -> Path:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256[:80]!r}")
        return self.root / sha256[:2] / f"{sha256}.png"

    def put(self, png: bytes) -> str:
        """Store a PNG (atomically; a no-op when it is already there) and return its sha256."""
        digest = hashlib.sha256(png).hexdigest()
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(png)
            os.replace(tmp, target)
        return digest

    def get(self, sha256: str) -> bytes:
        """The PNG bytes; ``FileNotFoundError`` when unknown."""
        return self.path(sha256).read_bytes()

    def exists(self, sha256: str) -> bool:
        try:
            return self.path(sha256).exists()
        except ValueError:
            return False
