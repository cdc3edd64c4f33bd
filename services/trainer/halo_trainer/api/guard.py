"""Who may change a run: the checks every state-changing route of the run API makes.

A web page the user opens in the same browser can send requests to 127.0.0.1 too. Browsers let a
page of another origin send a "simple" POST (no custom header, a form's or text's content type)
without asking the server first, and only hide the answer: that was enough to stop a run. So a
mutation must carry what such a page cannot send without a CORS preflight, which this API never
grants (it has no CORS headers at all):

1. ``Content-Type: application/json``, checked here, also on a route without a body (stop reads no
   body, so FastAPI's own refusal of a body not declared JSON, its ``strict_content_type`` default,
   never applied to it; and this rule does not hang on a framework default);
2. no ``Origin`` but the API's own: browsers send ``Origin`` with every POST, so a page of another
   origin is refused by name even where (1) would let it through. "Its own" means the origin the
   request was addressed to (``Host``) on a loopback name or the bind host, or one listed in
   ``HALO_TRAINER_ALLOWED_ORIGINS``: a page of a DNS name rebound to 127.0.0.1 is refused too;
3. the bearer token when one is set (the local stack sets a random one: ``halo.local_token``).

Tools (the CLI, curl) send no ``Origin``; they pass (1) and (3).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from urllib.parse import urlsplit

from fastapi import Request

from halo.service import ServiceError
from halo.settings.trainer import TrainerSettings

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def _host_name(netloc: str) -> str:
    return (urlsplit(f"//{netloc}").hostname or "").lower()


def own_origin(request: Request, settings: TrainerSettings) -> bool:
    """Whether the request's ``Origin`` (present) is this API's own, as the module docstring says."""
    origin = request.headers["origin"].rstrip("/").lower()
    if origin in {o.rstrip("/").lower() for o in settings.allowed_origins}:
        return True
    host = request.headers.get("host", "").lower()
    names = LOOPBACK_NAMES | ({settings.host.lower()} if settings.host not in ("0.0.0.0", "::", "") else set())
    return bool(host) and origin == f"http://{host}" and _host_name(host) in names


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (the scheme in any case, RFC 7235);
    None for anything else, a bare token included."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def check_mutation(request: Request, settings: TrainerSettings) -> None:
    """Raise the 4xx that names what a state-changing request lacks; see the module docstring."""
    what = f"{request.method} {request.url.path}"
    if "origin" in request.headers and not own_origin(request, settings):
        raise ServiceError(
            403,
            f"{what} refused: Origin {request.headers['origin']!r} is not this trainer's own page "
            "(another web page cannot change a run; HALO_TRAINER_ALLOWED_ORIGINS lists extra origins)",
        )
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise ServiceError(
            415,
            f"{what} needs Content-Type: application/json (got {media or 'none'}); "
            "a body may be empty, e.g. curl -X POST --json '{}' ...",
        )
    token = settings.api_token.get_secret_value()
    if token:
        given = bearer(request.headers.get("authorization"))
        if given is None or not secrets.compare_digest(given.encode(), token.encode()):
            raise ServiceError(
                401, "missing or wrong bearer token (Authorization: Bearer <token>; `halo stack token` prints it)"
            )


def mutation_guard(settings: TrainerSettings) -> Callable[[Request], None]:
    """The dependency every state-changing route declares: only the user's own tools and pages may send it."""

    def authorize(request: Request) -> None:
        check_mutation(request, settings)

    return authorize
