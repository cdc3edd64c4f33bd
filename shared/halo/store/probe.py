"""The probe: proof, at a node's start, that it sees the head's data and not a folder of its own.

The head's supervisor writes a random value to ``<data_dir>/cluster/store-probe`` once per data
folder and ships it to every node in its plan; a node reads the probe through its store and
compares. An empty local folder at the same path, a mount of another head's folder, or an
unreachable data server all fail here, with the path, instead of as a learner that cannot find a
screenshot an hour later.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from halo.store.base import PROBE, DataStore, StoreRefused
from halo.store.shared_fs import SharedFsStore

_ADVICE = (
    "mount the head's HALO_DATA_DIR at the same path on every node, "
    "or set HALO_STORE_BACKEND=http with HALO_STORE_HEAD_URL on the head (docs/cluster.md)"
)


def write_probe(data_dir: Path) -> str:
    """The probe of the head's data folder, made on first use; returns it. Kept afterwards, like the
    cluster token: Ray restarts a node's actor with the plan it was first given, probe included."""
    path = Path(data_dir) / PROBE
    if path.exists() and (value := path.read_text().strip()):
        return value
    value = secrets.token_hex(16)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(value)
    os.replace(tmp, path)
    return value


def check_probe(store: DataStore, expected: str) -> None:
    """``StoreRefused`` naming the probe's path and why, unless ``store`` shows the head's probe."""
    where = str(store.root / PROBE) if isinstance(store, SharedFsStore) else f"{PROBE} from {store.describe()}"
    try:
        found = store.read_bytes(PROBE).decode(errors="replace").strip()
    except FileNotFoundError:
        raise StoreRefused(
            f"this node cannot see the head's data: the probe {where} does not exist here "
            f"(the head wrote {expected[:8]}... there at start); {_ADVICE}"
        ) from None
    except OSError as exc:
        raise StoreRefused(f"this node cannot read the probe {where}: {exc}; {_ADVICE}") from None
    if found != expected:
        raise StoreRefused(
            f"this node sees another data folder than the head's: the probe {where} holds {found[:8]}..., "
            f"the head wrote {expected[:8]}... (another head's folder, or an old copy); {_ADVICE}"
        )
