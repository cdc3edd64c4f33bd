"""``python -m halo.store serve`` (the head's data server) and ``python -m halo.store check
<probe>`` (this machine's view of the head's data: exit 0, or 1 with the reason)."""

from __future__ import annotations

import typer

from halo.cli.output import console, fail
from halo.logging import setup_logging
from halo.settings.store import StoreSettings

app = typer.Typer(help="The data plane: the head's data server and the node's probe check.", no_args_is_help=True)


@app.command()
def serve() -> None:
    """Serve the head's data folder's shared parts on HALO_STORE_HOST:HALO_STORE_PORT."""
    import uvicorn

    from halo.store.server import data_app

    setup_logging("halo_store")
    settings = StoreSettings()
    try:
        application = data_app(settings.data_dir, settings.token.get_secret_value())
    except ValueError as exc:
        fail(str(exc))
    uvicorn.run(application, host=settings.host, port=settings.port, log_level="warning")


@app.command()
def check(probe: str = typer.Argument(..., help="The value the head wrote to <data_dir>/cluster/store-probe")) -> None:
    """Refuse (exit 1, with the reason) unless this machine's store shows the head's probe."""
    from halo.store import StoreError, check_probe, open_store

    try:
        check_probe(open_store(), probe)
    except (StoreError, ValueError) as exc:
        fail(str(exc))
    console.print("this node sees the head's data")


if __name__ == "__main__":
    app()
