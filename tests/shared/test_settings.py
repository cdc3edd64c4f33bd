"""Settings: environment overrides, frozen, documented, secrets masked when logged."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from halo.settings import REPO_ROOT, resolved
from halo.settings.env import EnvSettings
from halo.settings.policy import PolicySettings
from halo.settings.reward import RewardSettings
from halo.settings.sites import SitesSettings
from halo.settings.trainer import TrainerSettings

ALL = [EnvSettings, PolicySettings, RewardSettings, SitesSettings, TrainerSettings]


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_field_is_documented(cls):
    for name, field in cls.model_fields.items():
        assert field.description, f"{cls.__name__}.{name} has no description"


def test_environment_overrides_and_frozen(monkeypatch):
    monkeypatch.setenv("HALO_ENV_PORT", "9123")
    monkeypatch.setenv("HALO_REDIS_URL", "redis://example:1/2")
    s = EnvSettings()
    assert s.port == 9123 and s.redis_url == "redis://example:1/2"
    with pytest.raises(ValidationError):
        s.port = 1


def test_bad_value_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HALO_REWARD_PORT", "not-a-port")
    with pytest.raises(ValidationError, match="port"):
        RewardSettings()


def test_secrets_are_masked(monkeypatch, caplog):
    monkeypatch.setenv("HALO_TRAINER_API_TOKEN", "s3cret-token")
    out = resolved(TrainerSettings())
    assert out["api_token"] == "***"
    from halo.settings import log_settings

    with caplog.at_level(logging.INFO):
        log_settings(TrainerSettings(), logging.getLogger("t"))
    assert "s3cret-token" not in caplog.text


def test_the_trainer_reads_no_other_service_settings():
    """One owner per setting: the trainer (and the tools that play its jobs) build nothing from
    another service's class; what they need of vLLM is in TrainerSettings and the run's config."""
    paths = [*(REPO_ROOT / "services" / "trainer").rglob("*.py"), *(REPO_ROOT / "scripts").glob("eval_*.py")]
    for path in paths:
        text = path.read_text()
        for other in ("PolicySettings", "EnvSettings", "RewardSettings", "SitesSettings"):
            assert other not in text, f"{path.relative_to(REPO_ROOT)} uses {other}"


def test_a_learner_field_a_run_owns_is_refused_in_the_trainer_environment(monkeypatch):
    monkeypatch.setenv("HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE", "4")
    assert TrainerSettings(_env_file=None).learner.micro_batch_size == 4
    monkeypatch.setenv("HALO_TRAINER_LEARNER__LEARNING_RATE", "0.1")
    with pytest.raises(ValidationError, match="learning_rate belong to each run's config"):
        TrainerSettings(_env_file=None)


@pytest.mark.parametrize(
    ("module", "variable", "value", "words"),
    [
        ("halo_trainer", "HALO_TRAINER_LEARNER_RANKS", "0", "greater than or equal to 1"),
        ("halo_trainer", "HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE", "abc", "valid integer"),
        ("halo_trainer", "HALO_STACK_REDIS_PORT", "x", "valid integer"),  # a shared field: its own name
        ("halo_reward", "HALO_REWARD_PORT", "nope", "valid integer"),
    ],
)
def test_a_service_started_with_a_bad_setting_names_it_in_one_line(module, variable, value, words):
    done = subprocess.run(
        [sys.executable, "-m", module], env={**os.environ, variable: value}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"{module}: {variable}={value!r}: "), done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
