"""Typed async clients for the environment and reward services (the trainer's rollout workers use them).

Errors are mapped to two kinds, because the trainer treats them differently: ``ServiceUnavailable``
(connection refused, timeout, 5xx: infrastructure, the job is retried or quarantined, never scored)
and ``ServiceRejected`` (4xx: our request was wrong, a bug to surface).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from halo.schemas import (
    Action,
    CreateSessionRequest,
    ForkRequest,
    ForkResponse,
    ResetResponse,
    RewardBreakdown,
    RewardRequest,
    StepRequest,
    StepResponse,
    Task,
    ValidationResult,
)
from halo.schemas.tasks import TaskReachability

T = TypeVar("T", bound=BaseModel)

# Forget a pooled connection after 2 s idle. The services (uvicorn, and vLLM's server) close idle
# keep-alive connections after 5 s; httpx's default expiry is also 5 s, so a request sent after a
# pause could go out on a connection the server was closing and fail with an empty ReadError
# (seen once on POST /sessions after a minute-long learner step).
KEEPALIVE_EXPIRY_S = 2.0


class ServiceError(Exception):
    def __init__(self, service: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{service}: {message}")
        self.service, self.status = service, status


class ServiceUnavailable(ServiceError):
    """Connection failure, timeout or 5xx: an infrastructure error."""


class ServiceRejected(ServiceError):
    """A 4xx answer: the request was wrong."""


class _Client:
    service = "service"

    def __init__(self, base_url: str, timeout_s: float = 60.0, retries: int = 2) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            timeout=httpx.Timeout(timeout_s, connect=5.0),
            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S),
        )
        self.retries = retries

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _request(self, method: str, path: str, *, idempotent: bool = True, **kwargs: Any) -> httpx.Response:
        attempts = self.retries + 1 if idempotent else 1
        for attempt in range(attempts):
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                if attempt + 1 < attempts:
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                raise ServiceUnavailable(self.service, f"{method} {path}: {type(exc).__name__}: {exc}") from exc
            if response.status_code >= 500:
                if attempt + 1 < attempts and response.status_code in (502, 503, 504):
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                raise ServiceUnavailable(
                    self.service, f"{method} {path}: {response.status_code} {_error(response)}", response.status_code
                )
            if response.status_code >= 400:
                raise ServiceRejected(
                    self.service, f"{method} {path}: {response.status_code} {_error(response)}", response.status_code
                )
            return response
        raise AssertionError("unreachable")

    async def _typed(self, model: type[T], method: str, path: str, **kwargs: Any) -> T:
        return model.model_validate((await self._request(method, path, **kwargs)).json())


def _error(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", response.text))[:500]
    except ValueError:
        return response.text[:500]


class EnvClient(_Client):
    service = "env"

    async def reset(self, task_id: str, seed: int = 0, max_steps: int = 30, run_id: str = "") -> ResetResponse:
        body = CreateSessionRequest(task_id=task_id, seed=seed, max_steps=max_steps, run_id=run_id)
        # Not retried: a lost answer would leave an orphan session (reaped by the env's TTL).
        return await self._typed(
            ResetResponse, "POST", "/sessions", json=body.model_dump(mode="json"), idempotent=False
        )

    async def step(self, session_id: str, action: Action) -> StepResponse:
        body = StepRequest(action=action).model_dump(mode="json")
        return await self._typed(StepResponse, "POST", f"/sessions/{session_id}/step", json=body, idempotent=False)

    async def fork(self, session_id: str, n: int) -> ForkResponse:
        body = ForkRequest(n=n).model_dump(mode="json")
        return await self._typed(ForkResponse, "POST", f"/sessions/{session_id}/fork", json=body, idempotent=False)

    async def validate(self, session_id: str) -> ValidationResult:
        return await self._typed(ValidationResult, "POST", f"/sessions/{session_id}/validate")

    async def close(self, session_id: str) -> None:
        try:
            await self._request("DELETE", f"/sessions/{session_id}")
        except ServiceRejected as exc:
            if exc.status != 404:  # already gone is fine
                raise

    async def screenshot(self, sha256: str) -> bytes:
        return (await self._request("GET", f"/screenshots/{sha256}")).content

    async def tasks(self, domain: str | None = None) -> list[Task]:
        params = {"domain": domain} if domain else None
        return [Task.model_validate(t) for t in (await self._request("GET", "/tasks", params=params)).json()]

    async def reachability(self, domain: str, timeout_s: float = 3.0) -> list[TaskReachability]:
        """Whether each of ``domain``'s tasks' sites answers from the env service (one probe per origin)."""
        params = {"domain": domain, "timeout_s": timeout_s}
        response = await self._request("GET", "/tasks/reachability", params=params, timeout=timeout_s + 30)
        return [TaskReachability.model_validate(t) for t in response.json()]


class RewardClient(_Client):
    service = "reward"

    async def reward(self, request: RewardRequest) -> RewardBreakdown:
        # Idempotent by transition_id on the service side, so retrying is safe.
        return await self._typed(RewardBreakdown, "POST", "/reward", json=request.model_dump(mode="json"))
