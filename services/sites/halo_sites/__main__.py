"""`python -m halo_sites`: serve the sites service on the configured host and port."""

import uvicorn

from halo.settings.sites import SitesSettings
from halo_sites.app import create_app

if __name__ == "__main__":
    settings = SitesSettings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
