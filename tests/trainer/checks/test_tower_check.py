"""The run-start tower-LoRA check refuses a run plainly when the policy server cannot be asked.

Fast: a real ``PolicyClient`` pointed at a port nothing listens on (what a run meets when vLLM is
down or never came up); the server-facing cases run against vLLM in tests/policy/test_tower_lora_run.py.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from halo.policy_client import PolicyClient
from halo.schemas.env import Viewport
from halo.schemas.rollout import SamplingParams
from halo.settings.policy import PolicySettings
from halo_trainer.checks.prompt_check import PromptCheckFailed
from halo_trainer.checks.tower_check import TowerCheckUnanswered, check_tower_lora


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Run:  # the two RunConfig fields the check reads
    lora_target = "language+tower"
    sampling = SamplingParams(
        max_tokens=8, structured_outputs="off", history_limit=8, viewport=Viewport(width=320, height=240)
    )


def test_a_policy_server_that_never_answers_refuses_the_run_with_the_reason(tmp_path) -> None:
    async def check() -> None:
        settings = PolicySettings(port=_unused_port(), max_lora_rank=8)
        async with PolicyClient.from_settings(settings, structured_outputs="off", max_tokens=8) as client:
            await check_tower_lora(client, learner=None, cfg=_Run, run_dir=tmp_path, timeout_s=0.5)

    with pytest.raises(TowerCheckUnanswered, match="could not be asked") as refused:
        asyncio.run(check())
    assert isinstance(refused.value, PromptCheckFailed)  # runs.py fails the run as a settings problem
    assert "lora_target=language+tower" in str(refused.value) and "not ready after" in str(refused.value)


def test_a_language_only_run_asks_nothing(tmp_path) -> None:
    class Language(_Run):
        lora_target = "language"

    async def check() -> None:
        settings = PolicySettings(port=_unused_port(), max_lora_rank=8)
        async with PolicyClient.from_settings(settings, structured_outputs="off", max_tokens=8) as client:
            await check_tower_lora(client, learner=None, cfg=Language, run_dir=tmp_path, timeout_s=0.5)

    asyncio.run(check())
