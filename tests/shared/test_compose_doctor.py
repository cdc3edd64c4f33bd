"""`make doctor` on Compose, resolved from the rendered stacks: the self-check runs inside the trainer
container (`make up` ends with it unless DOCTOR=0), its learner is the trainer's, its adapter lies where
vLLM reads it, and vLLM accepts the rank a run's adapter has."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from halo.schemas import RunSpec
from halo.settings.policy import PolicySettings
from halo.settings.trainer import TrainerSettings
from tests.shared.compose_stack import CPU_OVERRIDE, ROOT, Stack, _volume_of, load, only_environment
from tests.shared.test_compose_make_and_launch import _make


@pytest.fixture(scope="module", params=["gpu", "cpu"])
def stack(request, tmp_path_factory: pytest.TempPathFactory) -> Stack:
    files = (ROOT / "docker-compose.yml",) + ((CPU_OVERRIDE,) if request.param == "cpu" else ())
    return Stack(load(tmp_path_factory.mktemp("compose"), *files))


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("which", ["compose", "compose-cpu"])
def test_make_doctor_runs_inside_the_trainer_container_and_make_up_ends_with_it(tmp_path: Path, which: str):
    doctor = _make(tmp_path, "doctor", env_file=f"HALO_STACK={which}\n")
    assert doctor.returncode == 0, doctor.stderr
    line = next(x for x in doctor.stdout.splitlines() if "halo doctor" in x)
    assert line.endswith("exec -T trainer halo doctor ") and ".venv" not in doctor.stdout
    assert "trainer is not running: run" in doctor.stdout  # a stack that is not up is said so, never the host's
    up = _make(tmp_path, "up", env_file=f"HALO_STACK={which}\n")
    assert up.returncode == 0, up.stderr
    assert up.stdout.rstrip().endswith("exec -T trainer halo doctor")
    skipped = _make(tmp_path, "up", "DOCTOR=0", env_file=f"HALO_STACK={which}\n")
    assert "halo doctor" not in skipped.stdout and "DOCTOR=0" in skipped.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_doctor_on_the_embedded_stack_runs_the_cli_here(tmp_path: Path):
    result = _make(tmp_path, "doctor", env_file="")
    assert result.returncode == 0, result.stderr
    assert ".venv/bin/halo doctor" in result.stdout and "exec" not in result.stdout


def test_the_doctors_adapter_lies_where_vllm_reads_it(stack: Stack):
    tname, trainer = stack.by_type(TrainerSettings)
    pname, _ = stack.by_type(PolicySettings)
    folder = trainer.data_dir / "doctor"  # halo_trainer.doctor.runner writes the adapter there
    held = _volume_of(stack.services[tname], folder)
    assert held is not None and not held[0].startswith("/"), f"{folder} is on no named volume of the trainer"
    assert _volume_of(stack.services[pname], folder) == held, f"vLLM does not see {folder} as the trainer does"


def test_the_doctors_run_resolves_in_the_trainer_container_and_vllm_takes_its_rank(stack: Stack):
    from halo_trainer.config import load_defaults, profile_for, resolve

    tname, trainer = stack.by_type(TrainerSettings)
    _, policy = stack.by_type(PolicySettings)
    with only_environment(stack.env[tname]):
        defaults = load_defaults(trainer.rl_config)
    run = resolve(RunSpec(domain="playground"), "doctor", ["playground"], defaults, profile_for(trainer.target))
    assert run.lora_r <= policy.max_lora_rank, "the adapter check (a run's rank) would be refused by vLLM"
    assert trainer.policy_model_name == policy.served_model_name
