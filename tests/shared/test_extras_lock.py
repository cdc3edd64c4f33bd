"""pyproject.toml's pinned extras name the lock's versions: an extra that pins a package pins it at
requirements/lock.txt's version, and asks for no extra of it whose packages the lock lacks."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
gpu_lock = load_script("scripts/gpu_lock.py")


def pins(extra: str) -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {gpu_lock.norm(r.name): r for r in map(Requirement, project["optional-dependencies"][extra])}


def test_the_cluster_extra_pins_the_locks_ray_typer_and_rich() -> None:
    lock = gpu_lock.read_lock(gpu_lock.LOCK)
    cluster = pins("cluster")
    assert set(cluster) == {"ray", "typer", "rich"}
    for name, requirement in cluster.items():
        (spec,) = requirement.specifier
        assert (spec.operator, spec.version) == ("==", lock[name]), f"{name}: the lock has {lock[name]}"
        # ray[default] would pull the dashboard's packages (aiohttp-cors, opencensus...), none in the lock.
        assert not requirement.extras, name


def test_every_pinned_extra_matches_the_lock() -> None:
    lock = gpu_lock.read_lock(gpu_lock.LOCK)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra in project["optional-dependencies"]:
        for name, requirement in pins(extra).items():
            exact = [s.version for s in requirement.specifier if s.operator == "=="]
            assert exact in ([], [lock.get(name)]), f"[{extra}] {name}=={exact[0]}, the lock {lock.get(name)}"
