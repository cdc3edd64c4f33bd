"""`python -m halo_env`: serve the env service on the configured host and port."""

import uvicorn

from halo.settings import settings_or_exit
from halo.settings.env import EnvSettings
from halo_env.app import create_app

if __name__ == "__main__":
    settings = settings_or_exit(EnvSettings, "halo_env")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
