"""The one POST to vLLM's ``/v1/chat/completions``, for the single server and for every replica.

vLLM keeps a cache of processed images in its API process and a mirror of it in its engine
process; the API process sends an image it believes cached as its hash alone. When a request is
aborted between the two (a client timeout, a cancelled job), the caches drift: the engine no
longer holds an image the API process thinks it has. vLLM (0.32) then answers the next request
with that image with a bare ``500 Internal server error`` and drops the hash from the API's
cache, so that a second send carries the image again ("returning a retryable response so the
items are resent", its engine log). The second send here is that recovery; a 500 with a lasting
cause (a dead engine, tokens the grammar rejects) comes back and is raised.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from halo.transport import ServiceFailed, Transport

logger = logging.getLogger(__name__)

CHAT_PATH = "/v1/chat/completions"


async def post_chat(http: Transport, body: dict[str, Any], *, retry: bool = True) -> httpx.Response:
    """POST ``body``; sent once more after a 500 (see the module's docstring)."""
    try:
        return await http.request("POST", CHAT_PATH, json=body, retry=retry)
    except ServiceFailed as exc:
        if exc.status != 500:
            raise
        logger.warning("%s; sending it once more (vLLM's image caches drift after an aborted request)", exc)
        return await http.request("POST", CHAT_PATH, json=body, retry=retry)
