"""Local web clones server settings (prefix ``HALO_SITES_``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from halo.settings import HaloSettings


class SitesSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_SITES_", env_file=".env", extra="ignore", frozen=True)

    host: str = Field("127.0.0.1", description="Bind address")
    port: int = Field(8300, description="HTTP port")
