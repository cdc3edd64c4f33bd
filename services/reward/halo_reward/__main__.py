"""`python -m halo_reward`: serve the reward service on the configured host and port."""

import uvicorn

from halo.settings.reward import RewardSettings
from halo_reward.app import create_app

if __name__ == "__main__":
    settings = RewardSettings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
