"""A CPU-target Compose stack of a test's own: its project, env file and ports, so it touches no other stack."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stack_env(folder: Path, project: str, port_base: int) -> dict[str, str]:
    """The environment `make up STACK=compose-cpu` and scripts/compose_cpu.sh need for this stack:
    ports port_base+0 (policy), +100 env, +200 reward, +300 sites, +400 trainer; Redis port_base-2610."""
    env_file = folder / "env"
    env_file.write_text(f"HALO_TRAINER_API_TOKEN={os.urandom(16).hex()}\n")
    env_file.chmod(0o600)
    env = {k: os.environ[k] for k in ("PATH", "HOME", "DOCKER_HOST") if k in os.environ}
    env.update(
        ENV_FILE=str(env_file),
        HALO_ENV_FILE=str(env_file),
        HALO_CPU_PROJECT=project,
        HALO_CPU_POLICY_PORT=str(port_base),
        HALO_CPU_ENV_PORT=str(port_base + 100),
        HALO_CPU_REWARD_PORT=str(port_base + 200),
        HALO_CPU_SITES_PORT=str(port_base + 300),
        HALO_CPU_TRAINER_PORT=str(port_base + 400),
        HALO_CPU_REDIS_PORT=str(port_base - 2610),
        HALO_EXTRA_CA_CERTS=os.environ.get("HALO_EXTRA_CA_CERTS", ""),
    )
    return env


def compose(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/compose_cpu.sh", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def down(env: dict[str, str]) -> None:
    compose(env, "down", "-v", "--remove-orphans", timeout=300)
