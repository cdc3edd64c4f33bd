"""HALO env service (placeholder until its issue fills it: answers health and readiness)."""

from __future__ import annotations

from fastapi import FastAPI
from halo.logging import setup_logging
from halo.service import add_health_routes, install_error_handlers
from halo.settings import log_settings
from halo.settings.env import EnvSettings


def create_app(settings: EnvSettings | None = None) -> FastAPI:
    settings = settings or EnvSettings()
    logger = setup_logging("env", settings.log_level)
    log_settings(settings, logger)
    app = FastAPI(title="HALO env")
    install_error_handlers(app)
    add_health_routes(app, "env")
    return app
