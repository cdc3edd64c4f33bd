"""Settings: one frozen pydantic-settings class per service, every field documented with its unit.

Values come from environment variables (prefix per service, e.g. ``HALO_ENV_PORT``) or a ``.env``
file. Each service logs its resolved settings at start (``log_settings``) and the trainer saves them
with every checkpoint. Secrets are ``SecretStr`` and never logged.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, TypeVar

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[3]


def _shared(name: str) -> AliasChoices:
    """Shared fields are read from ``HALO_<NAME>`` whatever the service's own prefix is."""
    return AliasChoices(f"HALO_{name.upper()}", name)


class HaloSettings(BaseSettings):
    """Fields every service shares, read from ``HALO_*`` (not from the service's own prefix)."""

    model_config = SettingsConfigDict(env_prefix="HALO_", env_file=".env", extra="ignore", frozen=True)

    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        validation_alias=_shared("redis_url"),
        description="Redis for queues, run status, episode memory",
    )
    data_dir: Path = Field(
        REPO_ROOT / "var",
        validation_alias=_shared("data_dir"),
        description="Root of run folders, screenshots and adapters",
    )
    log_level: str = Field("INFO", validation_alias=_shared("log_level"), description="Python logging level")
    stack_redis_port: int | None = Field(
        None,
        validation_alias=_shared("stack_redis_port"),
        description="Port of the stack's own redis-server (default: one found free at the first "
        "`halo stack up`, recorded in <data_dir>/stack/redis/port)",
    )

    @property
    def screenshots_dir(self) -> Path:
        return self.data_dir / "screenshots"

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def adapters_dir(self) -> Path:
        return self.data_dir / "adapters"


def resolved(settings: BaseSettings) -> dict[str, Any]:
    """The settings as plain JSON, secrets masked."""
    out: dict[str, Any] = {}
    for name, value in settings.model_dump().items():
        if isinstance(getattr(settings, name), SecretStr):
            value = "***" if getattr(settings, name).get_secret_value() else ""
        out[name] = value
    return json.loads(json.dumps(out, default=str))


def log_settings(settings: BaseSettings, logger: logging.Logger) -> None:
    logger.info("resolved settings %s: %s", type(settings).__name__, json.dumps(resolved(settings), sort_keys=True))


S = TypeVar("S", bound=BaseSettings)


def settings_or_exit(cls: type[S], program: str) -> S:
    """``cls()`` as the environment and ``.env`` set it; a value it refuses ends ``program`` with
    one line per value, naming its variable (``HALO_TRAINER_LEARNER_RANKS='0': ...``), and exit
    status 2, not a traceback: what a service's start says about a bad setting."""
    try:
        return cls()
    except ValidationError as exc:
        for error in exc.errors():
            given = f"={str(error['input'])[:80]!r}" if isinstance(error.get("input"), (str, int, float)) else ""
            sys.stderr.write(f"{program}: {_variable(cls, error['loc'])}{given}: {error['msg']}\n")
        sys.exit(2)


def _variable(cls: type[BaseSettings], loc: tuple[Any, ...]) -> str:
    """The environment variable of a field's error location: a shared field's alias is its name."""
    if not loc:  # a check of the whole class
        return cls.__name__
    if str(loc[0]).startswith("HALO_"):
        return str(loc[0])
    delimiter = cls.model_config.get("env_nested_delimiter") or "__"
    return (cls.model_config.get("env_prefix", "") + delimiter.join(str(part) for part in loc)).upper()
