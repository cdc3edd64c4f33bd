"""What every store backend offers, the errors it raises and which parts of the data folder may
cross machines at all.

Paths are POSIX paths relative to the data folder (``screenshots/ab/ab12...png``,
``runs/<run>/adapters/v3``). Only the areas below are reachable: the data folder also holds the
cluster's and the run API's tokens, which must never be served.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Protocol

PROBE = "cluster/store-probe"

# Areas a node may read from the head: screenshots by hash, adapter folders (vLLM loads them by
# path), search trees, and the probe. Patterns over the relative path's parts.
_READABLE = (
    re.compile(r"screenshots/.+"),
    re.compile(r"adapters/.+"),
    re.compile(r"runs/[^/]+/(adapters|trees)(/.+)?"),
    re.compile(re.escape(PROBE)),
)
# What a node may add, never change: a screenshot, under the hash of its bytes (checked by the head),
# and a search tree its MCTS worker wrote (``runs/<run>/trees/<search>.json``; the same bytes again
# are accepted, other bytes under an existing name are refused).
SCREENSHOT = re.compile(r"screenshots/([0-9a-f]{2})/([0-9a-f]{64})\.png")
TREE = re.compile(r"runs/[^/]+/trees/[^/]+\.json")


class StoreError(RuntimeError):
    """The store cannot answer (a reason in words)."""


class StoreUnavailable(StoreError):
    """The head's data server did not answer."""


class StoreRefused(StoreError):
    """This node may not use the store as configured: the probe failed or the token was refused."""


def clean(rel: str) -> str:
    """``rel`` as a normalised relative path; ``ValueError`` naming the problem otherwise."""
    if not isinstance(rel, str) or not rel or "\\" in rel or "\x00" in rel:
        raise ValueError(f"not a store path: {str(rel)[:200]!r}")
    path = PurePosixPath(rel)
    if path.is_absolute() or any(part in ("", ".", "..") for part in rel.split("/")):
        raise ValueError(f"a store path is relative to the data folder, without '.' or '..': {rel[:200]!r}")
    return str(path)


def readable(rel: str) -> bool:
    return any(pattern.fullmatch(rel) for pattern in _READABLE)


def screenshot_path(sha256: str) -> str:
    return f"screenshots/{sha256[:2]}/{sha256}.png"


class DataStore(Protocol):
    """What crosses machines, seen from one process. ``shared_fs``: the head's folder mounted here;
    ``http``: fetched from the head's data server (docs/cluster.md, "The data plane")."""

    def describe(self) -> str:
        """Where the data comes from, for messages."""
        ...

    def read_bytes(self, rel: str) -> bytes:
        """The file's bytes; ``FileNotFoundError`` when the head has none."""
        ...

    def exists(self, rel: str) -> bool: ...

    def write_new(self, rel: str, data: bytes) -> None:
        """Add a file that does not exist yet (a screenshot, a search tree); an existing one is left as
        it is (the HTTP backend refuses other bytes under an existing tree's name: ``FileExistsError``)."""
        ...

    def local_dir(self, rel: str) -> Path:
        """A folder of the head's (an adapter) as a local path a process such as vLLM can open."""
        ...
