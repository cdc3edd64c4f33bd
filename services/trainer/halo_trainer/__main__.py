"""`python -m halo_trainer`: the trainer service (run API, rollout workers, learner)."""

import sys

import uvicorn

from halo.settings.trainer import TrainerSettings
from halo_trainer.app import create_app

if __name__ == "__main__":
    settings = TrainerSettings()
    if (problem := settings.exposure_problem()) is not None:
        # Checked before anything starts: a clear line and a non-zero exit, not a traceback.
        sys.stderr.write(f"halo_trainer: {problem}\n")
        sys.exit(2)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
