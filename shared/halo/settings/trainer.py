"""Trainer service settings (prefix ``HALO_TRAINER_``)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from halo.settings import HaloSettings


class TrainerSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_TRAINER_", env_file=".env", extra="ignore", frozen=True)

    host: str = Field("127.0.0.1", description="Bind address")
    port: int = Field(8400, description="HTTP port of the run API")
    api_token: SecretStr = Field(
        SecretStr(""), description="Bearer token for mutating endpoints; empty = open (local only)"
    )
    env_url: str = Field("http://127.0.0.1:8100", description="Environment service")
    reward_url: str = Field("http://127.0.0.1:8200", description="Reward service")
    policy_url: str = Field("http://127.0.0.1:8000", description="vLLM server")
