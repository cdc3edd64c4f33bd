"""The Compose contract on the rendered stacks: each service calls another where it listens, one model
and one target reach vLLM and the trainer, ports stay on loopback, the trainer refuses to run open.

The rendering and the contract's checks are in compose_stack.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from halo.settings.policy import GPU_DEFAULT_MODEL, PolicySettings
from halo.settings.trainer import TrainerSettings
from tests.shared.compose_stack import (
    CPU_OVERRIDE,
    POLICY_PORT_OVERRIDE,
    ROOT,
    TOKEN,
    Stack,
    _published,
    exposure_problems,
    load,
    render,
    resolve_run,
    wiring_problems,
)


def test_the_gpu_stack_is_wired_service_to_service(gpu_stack: Stack):
    assert wiring_problems(gpu_stack, expect_target="gpu") == []


def test_the_gpu_target_reaches_vllm_and_the_trainer(gpu_stack: Stack):
    _, policy = gpu_stack.by_type(PolicySettings)
    tname, trainer = gpu_stack.by_type(TrainerSettings)
    assert (policy.target, policy.resolved_dtype()) == ("gpu", "bfloat16")
    assert (trainer.target, trainer.resolved_device()) == ("gpu", "cuda")
    assert gpu_stack.derived[tname]["model"] == GPU_DEFAULT_MODEL
    cfg = resolve_run(trainer)
    assert cfg.profile is None and cfg.learning_rate == 1e-6  # the seeds' values, not the tiny profile
    assert cfg.sampling.structured_outputs == "off"
    for name in (gpu_stack.by_type(PolicySettings)[0], tname):
        devices = gpu_stack.services[name]["deploy"]["resources"]["reservations"]["devices"]
        assert devices[0]["capabilities"] == ["gpu"], name


def test_ports_are_published_on_loopback_and_vllm_not_at_all(gpu_stack: Stack, tmp_path: Path):
    assert exposure_problems(gpu_stack) == []
    assert {n for n, s in gpu_stack.services.items() if _published(s)} == {"env", "reward", "trainer"}
    # Opting in to every interface leaves vLLM unpublished; its own opt-in stays on loopback.
    public = Stack(load(tmp_path, variables={"HALO_BIND_ADDRESS": "0.0.0.0"}))
    assert {(n, a) for n, s in public.services.items() for a, _ in _published(s)} == {
        ("env", "0.0.0.0"),
        ("reward", "0.0.0.0"),
        ("trainer", "0.0.0.0"),
    }
    debug = Stack(load(tmp_path, ROOT / "docker-compose.yml", POLICY_PORT_OVERRIDE))
    assert _published(debug.services["policy"]) == [("127.0.0.1", 8000)]


def test_the_stack_does_not_start_without_a_trainer_token(gpu_stack: Stack, tmp_path: Path):
    result = render(tmp_path)
    assert result.returncode != 0
    assert "HALO_TRAINER_API_TOKEN" in result.stderr and "make up" in result.stderr
    _, trainer = gpu_stack.by_type(TrainerSettings)
    assert trainer.host == "0.0.0.0" and trainer.api_token.get_secret_value() == TOKEN


def test_the_trainer_refuses_a_public_address_without_a_token(tmp_path: Path):
    """`python -m halo_trainer` exits with one clear line, before anything starts."""
    open_public = TrainerSettings(_env_file=None, host="0.0.0.0", api_token="")
    assert "HALO_TRAINER_API_TOKEN" in (open_public.exposure_problem() or "")
    for host in ("127.0.0.1", "localhost", "::1"):
        assert TrainerSettings(_env_file=None, host=host, api_token="").exposure_problem() is None
    assert TrainerSettings(_env_file=None, host="0.0.0.0", api_token="t").exposure_problem() is None
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALO_")}
    env |= {"HALO_TRAINER_HOST": "0.0.0.0", "HALO_TRAINER_API_TOKEN": "", "HALO_DATA_DIR": str(tmp_path)}
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "halo_trainer"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "refusing to serve the run API on 0.0.0.0" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(not CPU_OVERRIDE.exists(), reason="docker-compose.cpu.yml is not in this checkout")
def test_the_cpu_override_is_wired_the_same_way_on_host_networking(tmp_path: Path):
    stack = Stack(load(tmp_path, ROOT / "docker-compose.yml", CPU_OVERRIDE))
    assert wiring_problems(stack, expect_target="cpu") == []
    _, trainer = stack.by_type(TrainerSettings)
    assert resolve_run(trainer).profile == "tiny"
    # Host networking: every service binds loopback, so nothing is reachable from outside the machine.
    assert all(stack.host_network(n) for n in stack.services)
    assert all(s.host in ("127.0.0.1", "localhost") for s in stack.settings.values())


def _mutated(stack: Stack, service: str, **environment: str | None) -> Stack:
    config = yaml.safe_load(yaml.safe_dump(stack.config))
    env = config["services"][service].setdefault("environment", {})
    for key, value in environment.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return Stack(config)


@pytest.mark.parametrize(
    ("service", "environment", "expected"),
    [
        # The pre-fix wiring: nothing told the trainer its target or model; HALO_TRAINER_MODEL unread.
        ("trainer", {"HALO_TRAINER_TARGET": None, "HALO_TRAINER_MODEL": None}, "targets differ"),
        ("trainer", {"HALO_TRAINER_POLICY_URL": None}, "not another Compose service"),
        ("trainer", {"HALO_TRAINER_ENV_URL": "http://env:8000"}, "env listens on 8100"),
        ("trainer", {"HALO_TRAINER_API_TOKEN": ""}, "without a token"),
        ("policy", {"HALO_POLICY_MODEL": "/data/models/other"}, "the learner loads"),
        ("policy", {"HALO_POLICY_SERVED_MODEL_NAME": "base"}, "the trainer samples"),
        ("env", {"HALO_ENV_HOST": "127.0.0.1"}, "other containers cannot reach it"),
        ("trainer", {"HALO_DATA_DIR": "/srv"}, "on no volume"),
    ],
)
def test_the_contract_catches_broken_wiring(gpu_stack: Stack, service: str, environment: dict, expected: str):
    problems = wiring_problems(_mutated(gpu_stack, service, **environment), expect_target="gpu")
    assert any(expected in p for p in problems), problems


def test_the_contract_catches_public_ports(gpu_stack: Stack):
    config = yaml.safe_load(yaml.safe_dump(gpu_stack.config))
    config["services"]["policy"]["ports"] = ["8000:8000"]
    problems = exposure_problems(Stack(config))
    assert any("policy publishes 8000 on 0.0.0.0" in p for p in problems)
    assert any("runtime LoRA routes" in p for p in problems)


def test_no_secret_is_written_into_the_file():
    text = (ROOT / "docker-compose.yml").read_text()
    assert "sk-" not in text
    for service in yaml.safe_load(text)["services"].values():
        for key, value in (service.get("environment") or {}).items():
            if any(word in key for word in ("KEY", "TOKEN", "SECRET", "PASSWORD")):
                assert str(value).startswith("${"), key


def test_every_trainer_setting_of_the_env_file_reaches_the_trainer(tmp_path: Path):
    """The settings the memory plan's refusal names, set in the stack's env file, reach the trainer's
    container and its settings; the stack's own wiring still wins over the file."""
    text = (
        "HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE=2\nHALO_TRAINER_LEARNER__GRADIENT_CHECKPOINTING=true\n"
        "HALO_TRAINER_DTYPE=float32\nHALO_TRAINER_MEMORY_CHECK=false\nHALO_TRAINER_ENV_URL=http://elsewhere:1\n"
    )
    result = render(tmp_path, variables={"HALO_TRAINER_API_TOKEN": TOKEN}, env_text=text)
    assert result.returncode == 0, result.stderr
    _, trainer = Stack(yaml.safe_load(result.stdout)).by_type(TrainerSettings)
    assert (trainer.learner.micro_batch_size, trainer.learner.gradient_checkpointing) == (2, True)
    assert (trainer.dtype, trainer.memory_check) == ("float32", False)
    assert trainer.env_url == "http://env:8100"


def test_the_trainer_on_the_gpu_target_without_a_card_refuses_in_seconds(tmp_path: Path):
    """`python -m halo_trainer` on the gpu target where torch finds no CUDA device (this machine, or a
    container the NVIDIA runtime gave no card) exits with one line naming both fixes, before it
    waits on any service; before, it started and logged the env's absence once a second."""
    import sys
    import time

    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALO_")}
    env |= {"HALO_TRAINER_TARGET": "gpu", "HALO_DATA_DIR": str(tmp_path), "HALO_TRAINER_PORT": "1"}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "halo_trainer"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "torch finds no CUDA device" in result.stderr and "HALO_TRAINER_TARGET=cpu" in result.stderr
    assert "Traceback" not in result.stderr and time.monotonic() - started < 60
