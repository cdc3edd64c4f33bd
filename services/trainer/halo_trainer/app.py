"""HALO trainer service (placeholder until its issue fills it: answers health and readiness)."""

from __future__ import annotations

from fastapi import FastAPI

from halo.logging import setup_logging
from halo.service import add_health_routes, install_error_handlers
from halo.settings import log_settings
from halo.settings.trainer import TrainerSettings


def create_app(settings: TrainerSettings | None = None) -> FastAPI:
    settings = settings or TrainerSettings()
    logger = setup_logging("trainer", settings.log_level)
    log_settings(settings, logger)
    app = FastAPI(title="HALO trainer")
    install_error_handlers(app)
    add_health_routes(app, "trainer")
    return app
