"""`python -m halo_trainer`: the trainer service (run API, rollout workers, learner)."""

import uvicorn

from halo.settings.trainer import TrainerSettings
from halo_trainer.app import create_app

if __name__ == "__main__":
    settings = TrainerSettings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
