"""`python -m halo_sites`: serve the sites service on the configured host and port."""

import uvicorn

from halo.settings import settings_or_exit
from halo.settings.sites import SitesSettings
from halo_sites.app import create_app

if __name__ == "__main__":
    settings = settings_or_exit(SitesSettings, "halo_sites")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
