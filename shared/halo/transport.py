"""The one HTTP layer under every client of a service: env, reward, policy (vLLM), OpenAI-compatible APIs.

One error hierarchy, so a caller tells cases apart by class, whichever service it called:

- ``CallError``: the base; ``service`` names who was called, ``status`` is the HTTP status if one came.
- ``ServiceUnavailable``: no answer (nothing listens, the connection dropped); ``ServiceTimeout``, a
  subclass, when the answer did not come in time. Infrastructure: a rollout is never scored on it.
- ``ServiceFailed``: a 5xx, or an answer that breaks the protocol. Also infrastructure.
- ``ServiceRejected``: a 4xx, our request was wrong (a bug, or a name that does not exist);
  ``NotFound`` (404) is its subclass for callers that treat "already gone" or "not served" apart.

Retries: a call marked idempotent is repeated, with exponential backoff, on no answer and on
502/503/504; a call that is not (creating a session, stepping a page) is sent once, because a lost
answer may mean it happened.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx

logger = logging.getLogger("halo.transport")

# Forget a pooled connection after 2 s idle. The services (uvicorn, and vLLM's server) close idle
# keep-alive connections after 5 s; httpx's default expiry is also 5 s, so a request sent after a
# pause could go out on a connection the server was closing and fail with an empty ReadError
# (seen once on POST /sessions after a minute-long learner step).
KEEPALIVE_EXPIRY_S = 2.0
RETRY_STATUS = frozenset({502, 503, 504})


class CallError(Exception):
    """A call to another service failed."""

    def __init__(self, service: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.service, self.status = service, status


class ServiceUnavailable(CallError):
    """No answer: nothing listens at the address, or the connection failed."""


class ServiceTimeout(ServiceUnavailable):
    """No answer within the call's timeout."""


class ServiceFailed(CallError):
    """A 5xx, or an answer that is not what the protocol promises."""


class ServiceRejected(CallError):
    """A 4xx: the request was wrong; repeating it will not help."""


class NotFound(ServiceRejected):
    """A 404: the session, lease, model or adapter named does not exist."""


def key_headers(api_key: str) -> dict[str, str] | None:
    """The header a service that asks for a key (vLLM's ``--api-key``) takes; None without one."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else None


class Transport:
    """An ``httpx.AsyncClient`` for one service, with the error mapping and retry rule above."""

    def __init__(
        self,
        service: str,
        base_url: str,
        *,
        timeout_s: float = 60.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = 2,
        backoff_s: float = 0.2,
        headers: dict[str, str] | None = None,
        start_hint: str = "",
    ) -> None:
        self.service = service
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.start_hint = start_hint
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            headers=headers,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16, keepalive_expiry=KEEPALIVE_EXPIRY_S),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        retry: bool = True,
        timeout_s: float | None = None,
        json: Any = None,
        params: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """One call; returns a 2xx response or raises a ``CallError``. ``retry=False`` for a call
        that is not idempotent (or whose caller polls anyway): it is sent once."""
        attempts = 1 + (self.max_retries if retry else 0)
        kwargs: dict[str, Any] = {"json": json, "params": params}
        if timeout_s is not None:
            kwargs["timeout"] = timeout_s
        for attempt in range(attempts):
            try:
                response = await self._client.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                error = self._no_answer(method, path, exc)
            else:
                if response.is_success:
                    return response
                error = self._status_error(method, path, response)
            transient = isinstance(error, ServiceUnavailable) or error.status in RETRY_STATUS
            if not transient or attempt == attempts - 1:
                raise error
            delay = self.backoff_s * 2**attempt
            logger.warning(
                "%s %s failed (%s); retry %d/%d in %.1fs", method, path, error, attempt + 1, attempts - 1, delay
            )
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _no_answer(self, method: str, path: str, exc: httpx.HTTPError) -> CallError:
        where, kind = f"{self.service} at {self.base_url}", type(exc).__name__
        if isinstance(exc, httpx.ConnectError):
            hint = f" (start it with `{self.start_hint}`)" if self.start_hint else ""
            return ServiceUnavailable(self.service, f"{where} is not reachable ({kind}: {exc}); is it running?{hint}")
        if isinstance(exc, httpx.TimeoutException):
            return ServiceTimeout(self.service, f"{where}: {method} {path} timed out ({kind})")
        return ServiceUnavailable(self.service, f"{where}: {method} {path}: {kind}: {exc}")

    def _status_error(self, method: str, path: str, response: httpx.Response) -> CallError:
        status = response.status_code
        text = f"{self.service} at {self.base_url}: {method} {path} answered {status}: {_error_message(response)}"
        if status == 404:
            return NotFound(self.service, text, status)
        if 400 <= status < 500:
            return ServiceRejected(self.service, text, status)
        return ServiceFailed(self.service, text, status)


def _error_message(response: httpx.Response) -> str:
    """The error in an answer's body: ours (``{"error": "..."}``) or vLLM's and OpenAI's
    (``{"error": {"message": "..."}}``), else the text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)[:500]
        return str(err)[:500]
    return str(body)[:500]
