"""`halo`: run the local stack, launch and watch training runs, check health, manage tasks/models.

This module is the command tree and the console entry point (``halo = "halo.cli.main:app"``); each
command's implementation lives in a ``*_commands`` module beside it.
"""

from __future__ import annotations

import sys

import typer

from halo.cli import (
    cluster_commands,
    mode_commands,
    stack_commands,
    task_model_commands,
    train_commands,
    trainer_tool_commands,
)
from halo.cli.train_help import TrainCommand

app = typer.Typer(help="HALO-Agent: online RL for a Qwen3-VL browser agent.", no_args_is_help=True)
stack_app = typer.Typer(help="The embedded local stack (every service as a local process).", no_args_is_help=True)
tasks_app = typer.Typer(help="Task registries.", no_args_is_help=True)
model_app = typer.Typer(help="Models for the embedded default.", no_args_is_help=True)
runs_app = typer.Typer(help="Training runs on the trainer's HTTP API.", no_args_is_help=True)
modes_app = typer.Typer(help="Agent modes (docs/evaluation.md) and adapter promotion.", no_args_is_help=True)
app.add_typer(stack_app, name="stack")
app.add_typer(tasks_app, name="tasks")
app.add_typer(model_app, name="model")
app.add_typer(runs_app, name="runs")
app.add_typer(modes_app, name="modes")
cluster_app = typer.Typer(help="Past one box: rollout nodes placed by Ray (docs/cluster.md).", no_args_is_help=True)
app.add_typer(cluster_app, name="cluster")

# These commands hand every argument, --help included, to an entry point that parses its own options.
PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}

# -- stack ------------------------------------------------------------------------------------
stack_app.command("up")(stack_commands.stack_up)
stack_app.command("down")(stack_commands.stack_down)
stack_app.command("status")(stack_commands.stack_status)
stack_app.command("token")(stack_commands.stack_token)
app.command()(stack_commands.health)

# -- training ---------------------------------------------------------------------------------
app.command(cls=TrainCommand)(train_commands.train)
runs_app.command("list")(train_commands.runs_list)
runs_app.command("status")(train_commands.runs_status)
runs_app.command("stop")(train_commands.runs_stop)

# -- tasks and models -------------------------------------------------------------------------
tasks_app.command("snapshot")(task_model_commands.tasks_snapshot)
tasks_app.command("list")(task_model_commands.tasks_list)
model_app.command("build-tiny")(task_model_commands.model_build_tiny)

# -- modes, evaluation, smoke test --------------------------------------------------------------
modes_app.command("list")(mode_commands.modes_list)
modes_app.command("promote")(mode_commands.modes_promote)
app.command("eval", context_settings=PASSTHROUGH)(trainer_tool_commands.evaluate)
app.command("view", context_settings=PASSTHROUGH)(trainer_tool_commands.view)
app.command("memory-plan", context_settings=PASSTHROUGH)(trainer_tool_commands.memory_plan)
app.command("doctor", context_settings=PASSTHROUGH)(trainer_tool_commands.doctor)
app.command()(trainer_tool_commands.smoke)

# -- the cluster layer (python -m halo_cluster) ------------------------------------------------------
for _name in ("up", "status", "down", "scale", "join", "replica"):
    cluster_app.command(_name, context_settings=PASSTHROUGH)(getattr(cluster_commands, _name))


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
