"""The data plane: what crosses machines (screenshots by hash, adapter folders, the head's probe)
through one interface, ``DataStore``, with two backends: a shared filesystem (``shared_fs``) and
HTTP from the head (``http``). Which paths go through it is listed in docs/cluster.md."""

from __future__ import annotations

from halo.settings.store import StoreSettings
from halo.store.base import PROBE, DataStore, StoreError, StoreRefused, StoreUnavailable
from halo.store.http_client import HttpStore
from halo.store.probe import check_probe, write_probe
from halo.store.shared_fs import SharedFsStore

__all__ = [
    "PROBE",
    "DataStore",
    "HttpStore",
    "SharedFsStore",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "check_probe",
    "open_store",
    "remote_store",
    "store_env",
    "write_probe",
]


def open_store(settings: StoreSettings | None = None) -> DataStore:
    """The store this process's settings name; an HTTP store keeps its copies under the local
    data folder, at the same relative paths."""
    settings = settings or StoreSettings()
    if settings.backend == "shared_fs":
        return SharedFsStore(settings.data_dir)
    return HttpStore(settings.head_url, settings.token.get_secret_value(), settings.data_dir, settings.timeout_s)


def remote_store(settings: StoreSettings | None = None) -> DataStore | None:
    """The head's store when this process does not share the head's folder (``http``); None when it
    does (``shared_fs``: what it writes under the data folder is already the head's)."""
    settings = settings or StoreSettings()
    return None if settings.backend == "shared_fs" else open_store(settings)


def store_env(settings: StoreSettings, token: str) -> dict[str, str]:
    """What a node's processes need in their environment to reach the head's data as ``settings``
    (the head's) says; ``token`` is the cluster's."""
    if settings.backend == "shared_fs":
        return {"HALO_STORE_BACKEND": "shared_fs"}
    if not settings.head_url:
        raise ValueError("HALO_STORE_BACKEND=http needs HALO_STORE_HEAD_URL: the head's data server as nodes reach it")
    return {"HALO_STORE_BACKEND": "http", "HALO_STORE_HEAD_URL": settings.head_url, "HALO_STORE_TOKEN": token}
