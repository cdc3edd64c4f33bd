"""`halo eval`, `halo view`, `halo memory-plan`, `halo doctor` and `halo smoke`: the trainer's own entry
points (evaluation, the run viewer, the memory plan, the first-boot self-check, the smoke test), each run as ``python -m``, a child that
stops when the command is stopped (SIGTERM, Ctrl-C: ``halo.cli.children``)."""

from __future__ import annotations

import sys

import typer

from halo.cli import stack as local_stack
from halo.cli.children import exit_code, run_child
from halo.cli.output import err
from halo.cli.stack_commands import print_status


def evaluate(ctx: typer.Context) -> None:
    """Evaluate agent modes side by side (`halo eval --help` lists the options; docs/evaluation.md).

    Runs the trainer's evaluation entry point, which plays greedy episodes through the stack's
    services and writes results, a table and a chart under the data folder.
    """
    raise typer.Exit(exit_code(run_child([sys.executable, "-m", "halo_trainer.evaluation", *ctx.args])))


def view(ctx: typer.Context) -> None:
    """Serve the run viewer on a run folder, e.g. a finished run copied from a GPU box (`halo view --help`).

    Runs the trainer's viewer entry point; it reads the folder and the screenshot store only.
    """
    raise typer.Exit(exit_code(run_child([sys.executable, "-m", "halo_trainer.observe.viewer", *ctx.args])))


def memory_plan(ctx: typer.Context) -> None:
    """Will the learner fit beside vLLM? The gpu target's memory plan for a card (`halo memory-plan --card
    a100-40gb`, `--two-cards`, `--help`), as the trainer checks it when a run starts; exit 1 when it does not fit.
    """
    raise typer.Exit(exit_code(run_child([sys.executable, "-m", "halo_trainer.checks.memory_plan_cli", *ctx.args])))


def doctor(ctx: typer.Context) -> None:
    """First-boot self-check of the running stack (`halo doctor --help`; docs/training.md): the served model
    answers a screenshot, one adapter loads, the learner's log-probs match vLLM's, one update fits its
    memory plan. A table, a JSON report under the data folder, exit 1 on any failure.

    Runs where the trainer runs: on Compose inside the trainer container (`make doctor` does it).
    """
    raise typer.Exit(exit_code(run_child([sys.executable, "-m", "halo_trainer.doctor", *ctx.args])))


def smoke(max_steps: int = typer.Option(2, help="Steps of each backend's episode")) -> None:
    """Every service healthy, one short episode per reachable backend, the target, what is missing."""
    healthy = print_status(local_stack.status())
    if not healthy:
        err.print("[red]missing[/red]  services: some are not alive or ready (`halo stack up` starts them)")
        raise typer.Exit(1)
    code = exit_code(run_child([sys.executable, "-m", "halo_trainer.rollout.smoke", "--max-steps", str(max_steps)]))
    if code:
        err.print("[red]smoke test failed[/red]: see the `missing` lines")
    raise typer.Exit(code)
