"""`python -m halo_reward`: serve the reward service on the configured host and port."""

import uvicorn

from halo.settings import settings_or_exit
from halo.settings.reward import RewardSettings
from halo_reward.app import create_app

if __name__ == "__main__":
    settings = settings_or_exit(RewardSettings, "halo_reward")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
