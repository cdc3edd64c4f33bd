"""Reward service settings (prefix ``HALO_REWARD_``).

Reward *weights* are data, per domain, in ``configs/rewards/<domain>.yaml``; these settings say
how the service runs and which shaping scheme it applies (see docs/reward.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from halo.settings import REPO_ROOT, HaloSettings


class RewardSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_REWARD_", env_file=".env", extra="ignore", frozen=True)

    host: str = Field("127.0.0.1", description="Bind address")
    port: int = Field(8200, description="HTTP port")
    rules_dir: Path = Field(
        REPO_ROOT / "configs" / "rewards", description="Folder of per-domain reward rules (<domain>.yaml)"
    )
    shaping: Literal["milestone", "potential"] = Field(
        "milestone",
        description="milestone: pay each milestone's weight once per episode; "
        "potential: pay gamma * phi(s') - phi(s) (policy-invariant shaping)",
    )
    gamma: float = Field(0.99, ge=0.0, le=1.0, description="Discount used by potential shaping (unitless)")
    potential_terminal_zero: bool = Field(
        True, description="Potential shaping: phi = 0 at the end of an episode (needed for policy invariance)"
    )
    key_prefix: str = Field("halo:reward:", description="Prefix of every Redis key the service writes")
    memory_ttl_s: int = Field(
        3_600, ge=60, description="Lifetime of episode memory, stored answers and group stats, seconds"
    )
    claim_ttl_ms: int = Field(
        10_000, ge=100, description="How long a worker may hold a transition it is scoring, milliseconds"
    )
    duplicate_wait_s: float = Field(
        5.0, ge=0.0, description="How long a duplicate waits for the first copy's answer before a 409, seconds"
    )
    max_body_bytes: int = Field(
        8_000_000, ge=10_000, description="Largest accepted request body (Content-Length), bytes; larger is a 413"
    )
    max_remembered: int = Field(
        512, ge=8, description="Visited states and tried actions remembered per episode branch (count)"
    )
