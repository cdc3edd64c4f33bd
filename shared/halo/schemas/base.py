"""Base class of every message that crosses REST or Redis."""

from __future__ import annotations

import secrets
from typing import Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


def new_id(prefix: str) -> str:
    """An unguessable id with a readable prefix, e.g. ``sess-3f9c...`` (128 bits of randomness)."""
    return f"{prefix}-{secrets.token_hex(16)}"


class Message(BaseModel):
    """Every wire message carries ``schema_version`` and rejects unknown fields.

    ``extra="forbid"`` turns a misspelled field in a REST body into a 422 naming the field, rather
    than a silently ignored option.
    """

    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True)

    schema_version: Literal[1] = SCHEMA_VERSION
