"""docker-compose.yml: valid for the Docker client, and wired the way the design needs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def _compose_command() -> list[str]:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail("neither `docker compose` nor `docker-compose` is installed (scripts/setup.sh installs one)")


def test_compose_config_is_valid():
    result = subprocess.run([*_compose_command(), "config", "-q"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_service_has_a_healthcheck_and_waits_for_healthy_dependencies():
    assert set(SERVICES) >= {"redis", "policy", "env", "reward", "trainer"}
    for name, service in SERVICES.items():
        assert "healthcheck" in service, name
        for dep, condition in (service.get("depends_on") or {}).items():
            assert condition == {"condition": "service_healthy"}, (name, dep)


def test_policy_and_trainer_get_the_gpu_and_share_the_adapter_volume_at_the_same_path():
    for name in ("policy", "trainer"):
        devices = SERVICES[name]["deploy"]["resources"]["reservations"]["devices"]
        assert devices[0]["capabilities"] == ["gpu"]
    mounts = {
        name: {v.split(":")[0]: v.split(":")[1] for v in SERVICES[name]["volumes"]} for name in ("policy", "trainer")
    }
    assert mounts["policy"]["halo-data"] == mounts["trainer"]["halo-data"]
    assert SERVICES["policy"]["environment"]["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "1"


def test_no_secret_is_written_into_the_file():
    text = (ROOT / "docker-compose.yml").read_text()
    assert "sk-" not in text
    for service in SERVICES.values():
        for key, value in (service.get("environment") or {}).items():
            if any(word in key for word in ("KEY", "TOKEN", "SECRET", "PASSWORD")):
                assert str(value).startswith("${"), key
