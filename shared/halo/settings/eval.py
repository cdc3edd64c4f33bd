"""Evaluation and agent-mode settings (prefix ``HALO_EVAL_``): where promoted adapters and results
live, and the OpenAI-compatible API the GPT baseline modes call."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import SettingsConfigDict

from halo.settings import REPO_ROOT, HaloSettings


class EvalSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_EVAL_", env_file=".env", extra="ignore", frozen=True)

    checkpoints_dir: Path = Field(
        REPO_ROOT / "checkpoints",
        description="Promoted adapters of the qwen3vl_grpo / qwen3vl_mcts modes (<mode>_lora/ inside)",
    )
    results_subdir: str = Field("eval", description="Evaluations are written to <data_dir>/<results_subdir>/<id>/")
    openai_api_key: SecretStr = Field(
        SecretStr(""),
        validation_alias=AliasChoices("HALO_EVAL_OPENAI_API_KEY", "OPENAI_API_KEY"),
        description="Key of the OpenAI-compatible API (HALO_EVAL_OPENAI_API_KEY or OPENAI_API_KEY); "
        "empty: the gpt modes are refused",
    )
    openai_base_url: str = Field("https://api.openai.com/v1", description="OpenAI-compatible API base URL")
    openai_timeout_s: float = Field(60.0, gt=0, description="Timeout of one chat request to that API, s")
    gpt5_model: str = Field("gpt-5.2", description="Model of the gpt5_baseline mode (the users' GPT-5.2)")
    gpt4o_model: str = Field("gpt-4o", description="Model of the gpt4o_baseline mode")

    @property
    def results_dir(self) -> Path:
        return self.data_dir / self.results_subdir
