"""Reward service settings (prefix ``HALO_REWARD_``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from halo.settings import HaloSettings


class RewardSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_REWARD_", env_file=".env", extra="ignore", frozen=True)

    host: str = Field("127.0.0.1", description="Bind address")
    port: int = Field(8200, description="HTTP port")
