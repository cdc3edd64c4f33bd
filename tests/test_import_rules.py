"""The import rule of docs/packages.md, checked on the source: every ``import`` statement of every
package module (top level or inside a function), parsed with ``ast``, nothing executed.

- a service package (``services/<name>/halo_*``) imports the shared packages and itself; only the
  trainer and the policy service import ``halo_model``;
- ``halo_model`` imports ``halo`` and itself;
- ``halo`` (its CLI included) imports no service package and not ``halo_model``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = sorted(p.parent.name for p in (ROOT / "shared").glob("*/__init__.py"))
SERVICES = sorted(p.parent.name for p in (ROOT / "services").glob("*/*/__init__.py"))
OURS = set(SHARED) | set(SERVICES)
MODEL_USERS = {"halo_trainer", "halo_policy"}


def allowed(package: str) -> set[str]:
    """The first-party packages ``package`` may import."""
    if package == "halo":
        return {"halo"}
    if package == "halo_model":
        return {"halo", "halo_model"}
    return {"halo", package} | ({"halo_model"} if package in MODEL_USERS else set())


def package_dir(package: str) -> Path:
    if package in SHARED:
        return ROOT / "shared" / package
    (path,) = (ROOT / "services").glob(f"*/{package}")
    return path


def imported(source: str) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def violations(package: str) -> list[str]:
    bad = []
    for path in sorted(package_dir(package).rglob("*.py")):
        for line, target in imported(path.read_text(encoding="utf-8")):
            if target in OURS and target not in allowed(package):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {package} imports {target}")
    return bad


def test_every_package_is_known() -> None:
    assert SHARED == ["halo", "halo_cluster", "halo_model"]
    assert SERVICES == ["halo_env", "halo_policy", "halo_reward", "halo_sites", "halo_trainer"]


def test_the_checker_sees_imports_anywhere_in_a_module() -> None:
    source = "import os\nfrom halo.schemas import Task\n\ndef f():\n    from halo_env.registry import x\n    import halo_model.tiny\n"
    assert imported(source) == [(1, "os"), (2, "halo"), (5, "halo_env"), (6, "halo_model")]


@pytest.mark.parametrize("package", sorted(OURS))
def test_imports_follow_the_package_map(package: str) -> None:
    bad = violations(package)
    assert not bad, "imports that break docs/packages.md's rule:\n" + "\n".join(bad)


HEAVY = ("torch", "transformers", "peft", "vllm")


def test_the_trainer_api_process_starts_without_torch() -> None:
    """The trainer's API, its run manager and its workers import no model library: the service
    answers health checks at once, and a run's learner loads torch when the run starts. A module
    that only needs a type from a torch module imports it under ``TYPE_CHECKING``."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import halo_trainer.api.app, halo_trainer.api.runs, halo_trainer.worker, halo_trainer.observe.viewer.routes\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "", f"the trainer API imports {out.stdout.strip()} at start"
