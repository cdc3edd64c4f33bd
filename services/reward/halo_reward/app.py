"""HALO reward service: ``POST /reward`` scores one transition; ``GET /stats`` per-domain metrics.

Stateless: episode memory, idempotency records and metrics live in Redis, so workers scale out.
The reward itself is computed by ``halo_reward.core.score``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import redis.asyncio as aioredis
from fastapi import FastAPI, Request

from halo.browser_guard import NoBrowserWrites
from halo.logging import setup_logging
from halo.schemas import RewardBreakdown, RewardRequest
from halo.service import ServiceError, add_health_routes, install_error_handlers, redis_check
from halo.settings import log_settings
from halo.settings.reward import RewardSettings
from halo_reward.core import ScoringOptions, score
from halo_reward.rules import DOMAIN_PATTERN, RuleBook
from halo_reward.stats import RewardStats
from halo_reward.store import EpisodeStore, StoreBusy, StoreConflict

logger = logging.getLogger("halo.reward")


@dataclass
class Deps:
    rules: RuleBook
    opts: ScoringOptions
    store: EpisodeStore
    stats: RewardStats
    settings: RewardSettings


def _fingerprint(req: RewardRequest) -> str:
    return hashlib.sha256(req.model_dump_json().encode()).hexdigest()


def _check(req: RewardRequest) -> None:
    """Semantic checks the schema cannot express; each failure is a 422 naming the field."""
    if not DOMAIN_PATTERN.match(req.domain):
        raise ServiceError(422, f"invalid request: domain: {req.domain!r} must match {DOMAIN_PATTERN.pattern}")
    if req.infra_error:
        return
    if req.action is None and req.parse_error is None:
        raise ServiceError(422, "invalid request: give either 'action' or 'parse_error' (or set infra_error)")
    if req.action is not None and req.parse_error is not None:
        raise ServiceError(422, "invalid request: 'action' and 'parse_error' are mutually exclusive")
    if req.parent_transition_id == req.transition_id:
        raise ServiceError(422, "invalid request: parent_transition_id equals transition_id")


async def reward(req: RewardRequest, deps: Deps) -> RewardBreakdown:
    """Claim the transition (or answer the stored result as a duplicate), score it against its
    parent's memory with ``core.score``, store answer and memory together, then count it."""
    fingerprint = _fingerprint(req)
    while True:
        token = await deps.store.claim(req)
        if token is not None:
            break
        stored = await deps.store.existing(req)  # someone else scored (or is scoring) it
        if stored is None:
            continue  # their claim expired meanwhile: try to claim again
        if stored.fingerprint != fingerprint:
            raise ServiceError(409, f"transition_id {req.transition_id!r} was already scored with a different body")
        await deps.stats.duplicate(req)
        return stored.breakdown.model_copy(update={"duplicate": True})
    try:
        memory, parent = await deps.store.parent_memory(req)
        out, new_memory = score(req, memory, deps.rules.for_domain(req.domain), deps.opts)
        await deps.store.commit(req, token, fingerprint, out, new_memory, parent)
    except BaseException:
        with contextlib.suppress(aioredis.RedisError):  # the claim lapses by itself otherwise
            await deps.store.release(req, token)
        raise
    try:
        await deps.stats.record(req, out)
    except aioredis.RedisError as exc:  # metrics are observational: the reward is already stored
        logger.warning("stats not recorded for %s: %s", req.transition_id, exc)
    return out


def create_app(settings: RewardSettings | None = None) -> FastAPI:
    settings = settings or RewardSettings()
    log = setup_logging("reward", settings.log_level)
    log_settings(settings, log)
    rules = RuleBook.load(settings.rules_dir)  # a broken rules file stops the start, loudly
    log.info("reward rules loaded for domains %s (shaping=%s)", rules.domains, settings.shaping)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        client = aioredis.from_url(settings.redis_url)
        ttl = settings.memory_ttl_s
        app.state.deps = Deps(
            rules=rules,
            opts=ScoringOptions(
                mode=settings.shaping,
                gamma=settings.gamma,
                terminal_zero=settings.potential_terminal_zero,
                max_remembered=settings.max_remembered,
            ),
            store=EpisodeStore(client, settings.key_prefix, ttl, settings.claim_ttl_ms, settings.duplicate_wait_s),
            stats=RewardStats(client, settings.key_prefix, ttl),
            settings=settings,
        )
        try:
            yield
        finally:
            await client.aclose()

    app = FastAPI(title="HALO reward", lifespan=lifespan)
    install_error_handlers(app, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(NoBrowserWrites, service="reward")  # no web page may score episodes

    add_health_routes(app, "reward", {"redis": redis_check(settings.redis_url)})

    @app.post("/reward", response_model=RewardBreakdown, tags=["reward"])
    async def post_reward(req: RewardRequest, request: Request) -> RewardBreakdown:
        _check(req)
        try:
            return await reward(req, request.app.state.deps)
        except StoreConflict as exc:
            raise ServiceError(409, str(exc)) from exc
        except StoreBusy as exc:
            raise ServiceError(409, str(exc)) from exc
        except aioredis.RedisError as exc:
            logger.warning("redis unavailable while scoring %s: %s", req.transition_id, exc)
            raise ServiceError(503, f"episode memory unavailable: {type(exc).__name__}") from exc

    @app.get("/stats", tags=["reward"])
    async def get_stats(request: Request) -> dict:
        deps: Deps = request.app.state.deps
        try:
            domains = await deps.stats.snapshot()
        except aioredis.RedisError as exc:
            raise ServiceError(503, f"metrics store unavailable: {type(exc).__name__}") from exc
        return {"shaping": deps.settings.shaping, "gamma": deps.settings.gamma, "domains": domains}

    @app.get("/rules", tags=["reward"])
    async def get_rules(request: Request) -> dict:
        deps: Deps = request.app.state.deps
        return {d: deps.rules.for_domain(d).model_dump(mode="json") for d in deps.rules.domains}

    return app
