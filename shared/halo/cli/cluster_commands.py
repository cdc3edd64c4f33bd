"""`halo cluster up|status|down|scale|join|replica`: the cluster layer's own entry point
(``python -m halo_cluster``, docs/cluster.md), run as a child that stops with the command."""

from __future__ import annotations

import sys

import typer

from halo.cli.children import exit_code, run_child


def _run(command: str, ctx: typer.Context) -> None:
    from halo.cli.stack_redis import child_env

    argv = [sys.executable, "-m", "halo_cluster", command, *ctx.args]
    raise typer.Exit(exit_code(run_child(argv, env=child_env())))


def up(ctx: typer.Context) -> None:
    """Start the Ray head and the supervisor that places rollout nodes (`halo cluster up --help`)."""
    _run("up", ctx)


def status(ctx: typer.Context) -> None:
    """Each rollout node's state and why it is not running; exit 1 when one is not (`--json`)."""
    _run("status", ctx)


def down(ctx: typer.Context) -> None:
    """Stop the supervisor, the rollout nodes it placed, and the Ray head this machine started."""
    _run("down", ctx)


def scale(ctx: typer.Context) -> None:
    """Change the number of rollout nodes while the head runs: `halo cluster scale 3`."""
    _run("scale", ctx)


def join(ctx: typer.Context) -> None:
    """Join this machine as a rollout node: `halo cluster join --address <head>:<port>`."""
    _run("join", ctx)


def replica(ctx: typer.Context) -> None:
    """Keep a vLLM replica registered while it serves every live adapter: `halo cluster replica --id gpu0 --url ... --max-loras 4`."""
    _run("replica", ctx)
