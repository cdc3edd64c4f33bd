"""The local stack's run-API token: random, made once per data folder, readable by its owner only.

``HALO_TRAINER_API_TOKEN`` (``TrainerSettings.api_token``) stays the one setting. When it is empty,
``halo stack up`` gives the trainer it starts the token kept in ``<data_dir>/stack/trainer-token``
(made on first use, mode 0600), and the CLI reads the same file, so the user's own tools can change
runs and nothing else on the machine can: not a web page (``halo_trainer.api.guard``), not another
user of the machine (the file is the user's alone). The viewer asks for it once per tab; it is never
put in a URL.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from halo.settings.trainer import TrainerSettings

TOKEN_FILE = Path("stack") / "trainer-token"


def token_path(settings: TrainerSettings) -> Path:
    return settings.data_dir / TOKEN_FILE


def read_token(settings: TrainerSettings) -> str:
    """The token the user's tools send: the setting when set, else the stack's file ("" if none)."""
    if token := settings.api_token.get_secret_value():
        return token
    try:
        return token_path(settings).read_text().strip()
    except FileNotFoundError:
        return ""


def ensure_token(settings: TrainerSettings) -> str:
    """The token the local stack's trainer requires: the setting when set, else the file's, made now
    if absent (O_EXCL: two ``up`` at once agree on one token; 0600 from the first byte)."""
    path = token_path(settings)
    if token := read_token(settings):
        if not settings.api_token.get_secret_value() and path.stat().st_mode & 0o077:
            path.chmod(0o600)  # a copy made readable to others: the user's alone again
        return token
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return read_token(settings)
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(24) + "\n")
    return read_token(settings)
