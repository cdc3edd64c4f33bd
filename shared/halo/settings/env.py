"""Environment service settings (prefix ``HALO_ENV_``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from halo.settings import HaloSettings


class EnvSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_ENV_", env_file=".env", extra="ignore", frozen=True)

    host: str = Field("127.0.0.1", description="Bind address")
    port: int = Field(8100, description="HTTP port")
    sites_url: str = Field("http://127.0.0.1:8300", description="Base URL of the local web clones server")
