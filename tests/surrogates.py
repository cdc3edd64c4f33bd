"""Lone UTF-16 surrogates planted in every string of a JSON body (the odd-input tests of each service)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

JSON_HEADERS = {"content-type": "application/json"}


def string_places(value: Any, path: tuple = (), keys: Callable[[tuple], bool] = lambda path: True) -> Iterator[tuple]:
    """Every string value in ``value``, and every dict key for which ``keys(path)`` holds."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            if keys(path):
                yield (*path, ("key", key))
            yield from string_places(item, (*path, key), keys)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from string_places(item, (*path, i), keys)


def poisoned(body: Any, place: tuple) -> Any:
    """A copy of ``body`` with a lone surrogate added to the string (or dict key) at ``place``."""
    body = json.loads(json.dumps(body))
    *parents, last = place
    node = body
    for p in parents:
        node = node[p]
    if isinstance(last, tuple):  # a dict key
        node["\ud800" + last[1]] = node.pop(last[1])
    else:
        node[last] = node[last] + "\ud800"
    return body


def spellings(body: Any) -> tuple[bytes, bytes]:
    """The two ways a surrogate reaches a server: a JSON escape, and its UTF-8 bytes (invalid UTF-8)."""
    return json.dumps(body).encode(), json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")
