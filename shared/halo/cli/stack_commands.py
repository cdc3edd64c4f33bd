"""`halo stack up|down|status` and `halo health`: the embedded local stack (``halo.cli.stack``) from
the command line."""

from __future__ import annotations

import typer
from rich.table import Table

from halo.cli import stack as local_stack
from halo.cli.output import console, fail


def stack_up(
    service: list[str] = typer.Option(None, "--service", "-s", help="Only these services (repeatable)"),
) -> None:
    """Start every service (and Redis when none is reachable), wait until all are ready."""
    console.print("starting the local stack")
    try:
        state = local_stack.up(service or None, say=console.print)
    except RuntimeError as exc:
        fail(str(exc))
    console.print(f"[green]stack ready[/green] (redis {state.redis_url}); `halo stack down` stops it")


def stack_token() -> None:
    """Print the run API's token the CLI sends (HALO_TRAINER_API_TOKEN, else the local stack's own),
    to paste into the viewer once per tab; `halo stack up` makes the stack's on first use."""
    from halo.local_token import read_token, token_path
    from halo.settings.trainer import TrainerSettings

    settings = TrainerSettings()
    if not (token := read_token(settings)):
        fail(f"no token yet: `halo stack up` makes one ({token_path(settings)})")
    typer.echo(token)


def stack_down() -> None:
    """Stop every process `halo stack up` started."""
    local_stack.down(say=console.print)


def stack_status() -> None:
    """Show each service's URL, liveness and readiness."""
    print_status(local_stack.status())


def print_status(rows: list[dict]) -> bool:
    table = Table("service", "url", "alive", "ready")
    ok = True
    for row in rows:
        ok &= bool(row["alive"]) and row["ready"] is not False
        mark = {True: "[green]yes[/green]", False: "[red]no[/red]", None: "-"}
        table.add_row(row["service"], row["url"], mark[row["alive"]], mark[row["ready"]])
    console.print(table)
    return ok


def health() -> None:
    """Check every service's /health and /ready (exit 1 if any is down)."""
    if not print_status(local_stack.status()):
        raise typer.Exit(1)
