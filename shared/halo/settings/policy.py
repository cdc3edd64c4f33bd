"""Policy server (vLLM) settings (prefix ``HALO_POLICY_``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from halo.settings import HaloSettings


class PolicySettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_POLICY_", env_file=".env", extra="ignore", frozen=True)

    host: str = Field("127.0.0.1", description="Bind address of the vLLM server")
    port: int = Field(8000, description="HTTP port of the vLLM OpenAI-compatible server")
