"""Serve the viewer on one finished run folder (or a folder of them), without Redis or the trainer:
``python -m halo_trainer.observe.viewer <run folder> [--port 8090] [--screenshots <dir>] [--evals <dir>]``
(``halo view``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from fastapi.responses import RedirectResponse

from halo.screenshots import ScreenshotStore
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo_trainer.observe.viewer.folders import RunFolders
from halo_trainer.observe.viewer.routes import mount_viewer


def build_app(folder: Path, screenshots: Path, evals: Path | None = None) -> FastAPI:
    app = FastAPI(title="HALO run viewer")
    mount_viewer(app, RunFolders(folder), ScreenshotStore(screenshots), live=False, evals_dir=evals)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/ui/")

    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="halo view", description=__doc__)
    parser.add_argument("folder", type=Path, help="a run folder (holds config.json) or a folder of run folders")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--screenshots", type=Path, default=None, help="the screenshot store (default: the trainer's)")
    parser.add_argument(
        "--evals", type=Path, default=None, help="the evaluations' folder (default: halo eval's, <data_dir>/eval)"
    )
    args = parser.parse_args(argv)
    folder = args.folder.resolve()
    runs = RunFolders(folder)
    if not runs.folders():
        sys.stderr.write(f"{folder} holds no run (a run folder has a config.json)\n")
        return 2
    screenshots = args.screenshots or TrainerSettings().screenshots_dir
    sys.stdout.write(f"viewer of {folder}: http://{args.host}:{args.port}/ui/\n")
    sys.stdout.flush()
    evals = args.evals or EvalSettings().results_dir
    uvicorn.run(build_app(folder, screenshots, evals), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
