"""The HTTP backend: for clusters without a shared filesystem, a node fetches what it needs from
the head's data server (``halo.store.server``) and keeps a copy under its own data folder.

Reads are cached locally at the same relative path (an adapter folder lands where vLLM on this
node can open it); screenshots the node's env takes are uploaded, checked by their hash at the head.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from halo.store.base import StoreRefused, StoreUnavailable, clean

_TRIES = 3


class HttpStore:
    def __init__(self, head_url: str, token: str, cache_root: Path, timeout_s: float = 30.0) -> None:
        if not head_url.startswith(("http://", "https://")):
            raise ValueError(f"HALO_STORE_HEAD_URL must be an http(s) URL, not {head_url[:200]!r}")
        if not token:
            raise ValueError("the HTTP store needs the cluster's token (HALO_STORE_TOKEN)")
        self.head_url = head_url.rstrip("/")
        self.cache_root = Path(cache_root)
        self._http = httpx.Client(
            base_url=self.head_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s
        )

    def close(self) -> None:
        self._http.close()

    def describe(self) -> str:
        return f"the head's data server {self.head_url}"

    def _call(self, method: str, route: str, rel: str, **kwargs) -> httpx.Response:
        url = f"/v1/{route}/{quote(clean(rel))}"
        for attempt in range(_TRIES):
            try:
                response = self._http.request(method, url, **kwargs)
            except httpx.HTTPError as exc:
                if attempt == _TRIES - 1:
                    raise StoreUnavailable(f"{self.describe()} did not answer {method} {rel}: {exc!r}") from None
                time.sleep(0.5 * 2**attempt)
                continue
            if response.status_code >= 500 and attempt < _TRIES - 1:
                time.sleep(0.5 * 2**attempt)
                continue
            return self._checked(response, method, rel)
        raise AssertionError("unreachable")

    def _checked(self, response: httpx.Response, method: str, rel: str) -> httpx.Response:
        status = response.status_code
        if status in (401, 403):
            raise StoreRefused(f"{self.describe()} refused {method} {rel} ({status}): {_reason(response)}")
        if status == 404:
            raise FileNotFoundError(f"{rel}: not on the head ({self.describe()})")
        if status == 400:
            raise ValueError(f"{self.describe()} refused {method} {rel}: {_reason(response)}")
        if status == 409:
            raise FileExistsError(f"{self.describe()} refused {method} {rel}: {_reason(response)}")
        if status >= 300:
            raise StoreUnavailable(f"{self.describe()} answered {status} to {method} {rel}: {_reason(response)}")
        return response

    def read_bytes(self, rel: str) -> bytes:
        return self._call("GET", "files", rel).content

    def exists(self, rel: str) -> bool:
        try:
            self._call("HEAD", "files", rel)
        except FileNotFoundError:
            return False
        return True

    def write_new(self, rel: str, data: bytes) -> None:
        self._call("PUT", "files", rel, content=data)

    def local_dir(self, rel: str) -> Path:
        """The head's folder ``rel`` copied under this node's data folder (once: a folder the head
        serves, an adapter version, never changes), whole or not at all."""
        target = self.cache_root / clean(rel)
        if target.is_dir():
            return target
        listing = self._call("GET", "dirs", rel).json()["files"]
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
        try:
            for entry in listing:
                data = self.read_bytes(f"{clean(rel)}/{clean(entry['path'])}")
                if len(data) != entry["size"]:
                    raise StoreUnavailable(
                        f"{rel}/{entry['path']}: got {len(data)} bytes, the head lists {entry['size']}"
                    )
                out = partial / entry["path"]
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data)
            try:
                os.rename(partial, target)
            except OSError:
                if not target.is_dir():  # another process finished first: its copy is as good
                    raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        return target


def _reason(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", response.text))[:300]
    except ValueError:
        return response.text[:300]
