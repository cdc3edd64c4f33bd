"""Ray's token authentication, always on: every Ray process of the cluster (head, joining nodes,
drivers) carries ``RAY_AUTH_MODE=token`` and the same ``RAY_AUTH_TOKEN``; a node without it is
refused by the head (InvalidAuthToken), so a reachable GCS port is not an open door.

The token is made once per data folder, readable by its owner only, and never logged.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def token_path(data_dir: Path) -> Path:
    return data_dir / "cluster" / "ray_token"


def ensure_token(data_dir: Path) -> str:
    """The cluster's token, made on first use (``0600``)."""
    path = token_path(data_dir)
    if path.exists():
        token = path.read_text().strip()
        if token:
            return token
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
    return token


def auth_env(token: str) -> dict[str, str]:
    """What every Ray process of the cluster needs in its environment."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}


def use_token_here(token: str) -> None:
    """Turn token auth on for this process (a driver: the supervisor, a test) and its children.

    Ray reads the mode once, when it is imported; so after the environment is set, its cached
    config and token are refreshed, else a process that imported Ray first connects without the
    token and is refused."""
    os.environ.update(auth_env(token))
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
