"""The consoles every `halo` subcommand prints to, and its one way to fail: a red message on stderr
and a nonzero exit."""

from __future__ import annotations

import typer
from rich.console import Console

console = Console(soft_wrap=True)  # long URLs and paths stay on one line
err = Console(stderr=True)


def fail(message: str, code: int = 1) -> None:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)
