"""Data-plane settings (prefix ``HALO_STORE_``): how a process reaches what crosses machines
(screenshots, adapter folders, the head's probe) when it is not on the head (docs/cluster.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from halo.settings import HaloSettings


class StoreSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_STORE_", env_file=".env", extra="ignore", frozen=True)

    backend: Literal["shared_fs", "http"] = Field(
        "shared_fs",
        description="shared_fs: HALO_DATA_DIR is the head's folder, mounted at the same path; "
        "http: fetch from (and upload screenshots to) the head's data server at head_url",
    )
    head_url: str = Field("", description="The head's data server, e.g. http://10.0.0.1:6381 (http backend)")
    token: SecretStr = Field(
        SecretStr(""), description="Bearer token of the head's data server: the cluster's token (http backend)"
    )
    host: str = Field("127.0.0.1", description="Address the head's data server binds (`python -m halo.store serve`)")
    port: int = Field(6381, ge=1, le=65535, description="Port of the head's data server")
    timeout_s: float = Field(30.0, gt=0, description="Timeout of one request to the head's data server, seconds")
