"""`halo tasks snapshot|list` and `halo model build-tiny`: task registries and the embedded default's
model, each made by the owning service's own entry point."""

from __future__ import annotations

import subprocess
import sys

import typer
from pydantic import TypeAdapter
from rich.table import Table

from halo.cli.children import exit_code, run_child
from halo.cli.output import console, fail
from halo.schemas import Task


# The CLI imports no service package: each of these runs the owning service's own entry point.
def _service_module(*argv: str) -> str:
    """``python -m <argv>`` in this environment; its standard output (its errors go to the terminal)."""
    proc = run_child([sys.executable, "-m", *argv], stdout=subprocess.PIPE, text=True)
    if exit_code(proc) != 0:
        fail(f"`python -m {' '.join(argv)}` exited with {exit_code(proc)}")
    return proc.stdout


def tasks_snapshot(out: str = typer.Option("configs/real_v2_task_registry.json", help="Output JSON file")) -> None:
    """Write agisdk's REAL v2 task registry to a JSON file (reproducible task lists)."""
    count = _service_module("halo_env.registry", "--out", out).strip()
    console.print(f"wrote {count} tasks to {out}")


def tasks_list(domain: str = typer.Option(None, help="Only this site")) -> None:
    """List the local clones' tasks."""
    tasks = TypeAdapter(list[Task]).validate_json(
        _service_module("halo_sites.tasks", *(["--site", domain] if domain else []))
    )
    if not tasks:
        fail(f"no local tasks for site {domain!r}" if domain else "no local tasks")
    table = Table("task", "difficulty", "type", "goal")
    for t in tasks:
        table.add_row(t.id, str(t.difficulty), t.challengeType, t.goal[:90])
    console.print(table)


def model_build_tiny(
    seed: int = typer.Option(None, help="Weights seed (default: HALO_POLICY_TINY_SEED)"),
    out: str = typer.Option(None, help="Output folder (default: cached by hash)"),
) -> None:
    """Build (or find cached) the tiny random-weight Qwen3-VL that vLLM serves on the CPU."""
    args = [*(["--seed", str(seed)] if seed is not None else []), *(["--out", out] if out else [])]
    path = _service_module("halo_policy", "build-tiny", *args).strip().splitlines()[-1]
    console.print(f"tiny Qwen3-VL at {path}")
