"""The stack's one-shot steps: the model download and the GPU pre-flight run, and succeed, before vLLM starts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from halo.settings.policy import GPU_DEFAULT_MODEL, PolicySettings
from halo.settings.trainer import TrainerSettings
from tests.shared.compose_stack import (
    CPU_OVERRIDE,
    ROOT,
    TWO_GPU_OVERRIDE,
    Stack,
    _command,
    _mounts,
    container_environment,
    halo_module,
    load,
    one_shot_services,
    only_environment,
    wiring_problems,
)


# --- the model step: the download before vLLM's startup budget ----------------------------------------
def _model_script(service: Mapping[str, Any]) -> str:
    words = _command(service)
    assert words[:2] == ["python3", "-c"], words
    return words[2]


def _run_model_step(service: Mapping[str, Any], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The step's own script, with this environment's Python and huggingface_hub, offline."""
    import sys

    env = {
        "PATH": os.environ.get("PATH", ""),
        **container_environment(service),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", _model_script(service)], env=env, capture_output=True, text=True, timeout=120
    )


def test_vllm_starts_only_after_the_model_step_filled_the_shared_cache(gpu_stack: Stack):
    services = gpu_stack.services
    model = services["model"]
    assert one_shot_services(services) == {"model", "preflight"}
    assert str(model["restart"]) == "no" and "healthcheck" not in model
    assert services["policy"]["depends_on"]["model"] == {"condition": "service_completed_successfully"}
    # Same model name as vLLM and the learner, into the same Hugging Face cache volume and path.
    pname, policy = gpu_stack.by_type(PolicySettings)
    assert container_environment(model)["HALO_POLICY_MODEL"] == policy.model == GPU_DEFAULT_MODEL
    cache = "/root/.cache/huggingface"
    assert _mounts(model)[cache] == _mounts(services[pname])[cache] == _mounts(services["trainer"])[cache]
    assert _mounts(model)[cache] in gpu_stack.config["volumes"]
    assert "deploy" not in model  # no GPU for a download
    assert halo_module(model) is None  # not a second policy server


def test_the_contract_catches_vllm_not_waiting_for_the_model_step(gpu_stack: Stack):
    config = yaml.safe_load(yaml.safe_dump(gpu_stack.config))
    config["services"]["policy"]["depends_on"] = {"model": {"condition": "service_started"}}
    problems = wiring_problems(Stack(config), expect_target="gpu")
    assert any("before the one-shot model has completed successfully" in p for p in problems), problems


def _preflight_args(service: Mapping[str, Any]) -> dict[str, str]:
    words = _command(service)
    assert words[:3] == ["python", "-m", "halo.cli.gpu_preflight"], words
    return dict(zip(words[3::2], words[4::2], strict=True))


def _card(service: Mapping[str, Any]) -> str:
    (device,) = service["deploy"]["resources"]["reservations"]["devices"]
    (card,) = device["device_ids"]
    return card


def _learner_cards(service: Mapping[str, Any]) -> list[str]:
    """The cards the trainer's torch sees: every card reserved, CUDA_VISIBLE_DEVICES naming the learner's in
    nvidia-smi's numbering (Compose cannot make a device_ids list of one variable)."""
    (device,) = service["deploy"]["resources"]["reservations"]["devices"]
    assert device["count"] in ("all", -1) and "device_ids" not in device, device
    env = container_environment(service)
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID", env  # CUDA's default order is fastest first
    return env["CUDA_VISIBLE_DEVICES"].split(",")


@pytest.mark.parametrize("learner", ["0", "1", "1,2"])
def test_vllm_starts_only_after_the_gpu_preflight_checked_its_cards(tmp_path: Path, learner: str):
    """The pre-flight reads the cards the policy and the trainer get, vLLM's share as the policy gets it
    and the trainer's settings (its env file, its image with the memory plan), on one card, on two, and
    with the learner's ranks on two cards beside vLLM's (HALO_TRAINER_GPU=1,2)."""
    two_cards = learner != "0"
    if two_cards:
        variables = {"HALO_TRAINER_GPU": learner}
        stack = Stack(load(tmp_path, ROOT / "docker-compose.yml", TWO_GPU_OVERRIDE, variables=variables))
    else:
        stack = Stack(load(tmp_path))
    services = stack.services
    preflight, pname, tname = services["preflight"], *(stack.by_type(c)[0] for c in (PolicySettings, TrainerSettings))
    assert services[pname]["depends_on"]["preflight"] == {"condition": "service_completed_successfully"}
    assert "preflight" in one_shot_services(services) and halo_module(preflight) is None
    assert preflight["build"]["dockerfile"] == services[tname]["build"]["dockerfile"] == "Dockerfile.trainer"
    assert preflight.get("env_file") == services[tname].get("env_file")
    args = _preflight_args(preflight)
    assert args["--policy-gpu"] == _card(services[pname])
    assert args["--trainer-gpu"].split(",") == _learner_cards(services[tname]) == learner.split(",")
    assert (args["--policy-gpu"] not in learner.split(",")) == two_cards
    assert args["--policy-address"] == f"policy:{stack.listen_port(pname)}"  # a running stack's own vLLM
    (device,) = preflight["deploy"]["resources"]["reservations"]["devices"]
    assert device["count"] in ("all", -1) and "utility" in device["capabilities"]  # nvidia-smi on every card
    env = container_environment(preflight)
    with only_environment(env):
        policy_side, trainer_side = PolicySettings(_env_file=None), TrainerSettings(_env_file=None)
    policy, trainer = stack.settings[pname], stack.settings[tname]
    assert policy_side.gpu_memory_utilization == policy.gpu_memory_utilization == (0.90 if two_cards else 0.45)
    assert trainer_side.target == trainer.target == "gpu"
    assert policy_side.resolved_dtype() == policy.resolved_dtype() == "bfloat16"  # the capability check's dtype
    assert trainer_side.model == trainer.model == GPU_DEFAULT_MODEL
    cache = "/root/.cache/huggingface"
    assert _mounts(preflight)[cache] == _mounts(services[tname])[cache]  # a cached config of another model
    assert trainer_side.policy_shares_card == trainer.policy_shares_card == (not two_cards)


def test_the_contract_catches_vllm_not_waiting_for_the_preflight(gpu_stack: Stack):
    config = yaml.safe_load(yaml.safe_dump(gpu_stack.config))
    del config["services"]["policy"]["depends_on"]["preflight"]
    problems = wiring_problems(Stack(config), expect_target="gpu")
    assert "policy does not wait for the one-shot preflight" in problems, problems


@pytest.mark.skipif(not CPU_OVERRIDE.exists(), reason="docker-compose.cpu.yml is not in this checkout")
def test_the_preflight_has_nothing_to_check_on_the_cpu_target(tmp_path: Path):
    import sys

    stack = Stack(load(tmp_path, ROOT / "docker-compose.yml", CPU_OVERRIDE))
    preflight = stack.services["preflight"]
    assert preflight["image"] == stack.services["trainer"]["image"]  # one image, built once
    assert stack.services["policy"]["depends_on"]["preflight"] == {"condition": "service_completed_successfully"}
    env = {"PATH": "/usr/bin:/bin", **container_environment(preflight), "HALO_DATA_DIR": str(tmp_path)}
    words = _command(preflight)
    result = subprocess.run(
        [sys.executable, *words[1:]], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "nothing to check" in result.stdout, result.stderr


@pytest.mark.skipif(not CPU_OVERRIDE.exists(), reason="docker-compose.cpu.yml is not in this checkout")
def test_the_model_step_is_a_no_op_on_the_cpu_target(tmp_path: Path):
    stack = Stack(load(tmp_path, ROOT / "docker-compose.yml", CPU_OVERRIDE))
    model = stack.services["model"]
    assert stack.services["policy"]["depends_on"]["model"] == {"condition": "service_completed_successfully"}
    assert container_environment(model)["HALO_POLICY_MODEL"] == ""
    assert model["image"] == stack.services["policy"]["image"]  # one image, built once
    result = _run_model_step(model, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "nothing to download" in result.stdout and not (tmp_path / "hf").exists()


def test_the_model_step_skips_a_local_folder_and_fails_clearly_without_the_model(gpu_stack: Stack, tmp_path: Path):
    folder = tmp_path / "weights"
    folder.mkdir()
    service = {**gpu_stack.services["model"], "environment": {"HALO_POLICY_MODEL": str(folder)}}
    local = _run_model_step(service, tmp_path)
    assert local.returncode == 0 and "nothing to download" in local.stdout, local.stderr
    missing = _run_model_step(gpu_stack.services["model"], tmp_path)  # offline, empty cache
    assert missing.returncode == 1
    assert f"cannot reach {GPU_DEFAULT_MODEL}" in missing.stderr and "not in the cache" in missing.stderr
    assert "Traceback" not in missing.stderr
