"""Async client for the policy: vLLM's OpenAI-compatible server, plus an OpenAI-API client.

``PolicyClient.sample_actions`` asks for ``n`` candidate actions at one state in one request and
returns, per candidate, what online RL needs: the raw text, the parsed action (or why it is not
one), the completion token ids, the per-token behaviour log-probs and the prompt token ids (vLLM's
``return_token_ids``). The prompt comes from ``halo.prompts`` so the learner can rebuild it.

Behaviour log-probs are vLLM's default ``raw_logprobs``: ``log_softmax`` of the model's logits at
temperature 1, before temperature, top-p or the structured-output mask. The learner computes the
same quantity (``halo_policy.logprobs``), so the importance ratio compares like with like.

Adapters: each policy version is loaded under a new name ``<run>-v<k>`` and made current; the one
it replaces is unloaded once no in-flight request uses it (a per-name reference count). A name is
never reloaded in place: vLLM's in-place reload keeps a prefix cache keyed by the name.

Errors are typed (``PolicyUnavailable``, ``PolicyTimeout``, ``PolicyEngineDead``,
``PolicyModelNotFound``, ``PolicyBadRequest``, ``PolicyServerError``); calls that are safe to
repeat are retried with exponential backoff on connection errors and 502/503/504.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from halo.actions import parse_action, tool_call_json_schema
from halo.clients import KEEPALIVE_EXPIRY_S
from halo.prompts import DEFAULT_HISTORY_LIMIT, openai_messages, tool_call_regex
from halo.schemas.actions import Action, ActionParseError
from halo.schemas.env import Viewport
from halo.schemas.rollout import SamplingParams, StructuredMode
from halo.settings.policy import PolicySettings

logger = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({502, 503, 504})


# --- errors ---------------------------------------------------------------------------------------
class PolicyError(Exception):
    """Base of every policy client error. ``retryable``: the same call may succeed later."""

    retryable = False

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PolicyUnavailable(PolicyError):
    """Nothing answers at the server's address (not started, crashed, wrong URL)."""

    retryable = True


class PolicyTimeout(PolicyError):
    retryable = True


class PolicyEngineDead(PolicyError):
    """The HTTP server answers but ``/health`` is 503: the engine process died; restart the server."""


class PolicyBadRequest(PolicyError):
    """A 4xx: the request is wrong (too long a prompt, a bad parameter); retrying will not help."""


class PolicyModelNotFound(PolicyBadRequest):
    """The base model or adapter name is not served (404)."""


class PolicyServerError(PolicyError):
    retryable = True


class PolicyDisabled(PolicyError):
    """The OpenAI client has no API key configured."""


# --- results --------------------------------------------------------------------------------------
class Candidate(BaseModel):
    """One sampled answer. Exactly one of ``action`` and ``parse_error`` is set."""

    model_config = ConfigDict(frozen=True)

    index: int
    text: str
    action: Action | None
    parse_error: ActionParseError | None
    token_ids: list[int]
    logprobs: list[float]  # one per token in token_ids (behaviour log-probs, temperature 1)
    finish_reason: str | None = None


class SampleResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str  # the served name that answered: the base model or `<run>-v<k>`
    prompt_token_ids: list[int]
    candidates: list[Candidate]
    latency_s: float


def _parse_candidate(index: int, choice: dict[str, Any]) -> Candidate:
    text = (choice.get("message") or {}).get("content") or ""
    token_ids = list(choice.get("token_ids") or [])
    content = ((choice.get("logprobs") or {}).get("content")) or []
    logprobs = [float(t["logprob"]) for t in content]
    if len(logprobs) != len(token_ids):
        raise PolicyServerError(
            f"candidate {index}: {len(token_ids)} token ids but {len(logprobs)} logprobs; "
            "is the server a vLLM with return_token_ids support?"
        )
    parsed = parse_action(text)
    action, error = (parsed, None) if isinstance(parsed, Action) else (None, parsed)
    return Candidate(
        index=index,
        text=text,
        action=action,
        parse_error=error,
        token_ids=token_ids,
        logprobs=logprobs,
        finish_reason=choice.get("finish_reason"),
    )


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)[:500]
        return str(err)[:500]
    return str(body)[:500]


class _Http:
    """httpx with the error mapping and retries shared by both clients."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        connect_timeout_s: float,
        max_retries: int,
        backoff_s: float,
        headers: dict[str, str] | None = None,
        what: str = "policy server",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.what = what
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            headers=headers,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16, keepalive_expiry=KEEPALIVE_EXPIRY_S),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request(
        self, method: str, path: str, *, json: Any = None, retry: bool = True, timeout_s: float | None = None
    ) -> httpx.Response:
        """One call; returns a 2xx response or raises a ``PolicyError``."""
        attempts = 1 + (self.max_retries if retry else 0)
        for attempt in range(attempts):
            try:
                kwargs: dict[str, Any] = {"json": json}
                if timeout_s is not None:
                    kwargs["timeout"] = timeout_s
                response = await self._client.request(method, path, **kwargs)
                if response.is_success:
                    return response
                error = self._status_error(response)
            except httpx.ConnectError as exc:
                error = PolicyUnavailable(
                    f"{self.what} at {self.base_url} is not reachable ({exc.__class__.__name__}: {exc}); "
                    "is it running? (start it with `python -m halo_policy`)"
                )
            except httpx.TimeoutException as exc:
                error = PolicyTimeout(
                    f"{self.what} at {self.base_url}: {method} {path} timed out ({type(exc).__name__})"
                )
            except httpx.TransportError as exc:
                error = PolicyUnavailable(
                    f"{self.what} at {self.base_url}: transport error {type(exc).__name__}: {exc}"
                )
            retryable = error.retryable and (error.status is None or error.status in _RETRY_STATUS)
            if not retryable or attempt == attempts - 1:
                raise error
            delay = self.backoff_s * (2**attempt)
            logger.warning(
                "%s %s failed (%s); retry %d/%d in %.1fs", method, path, error, attempt + 1, attempts - 1, delay
            )
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _status_error(self, response: httpx.Response) -> PolicyError:
        status, message = response.status_code, _error_message(response)
        text = f"{self.what} answered {status}: {message}"
        if status == 404:
            return PolicyModelNotFound(text, status=status)
        if 400 <= status < 500:
            return PolicyBadRequest(text, status=status)
        return PolicyServerError(text, status=status)


# --- vLLM policy client ---------------------------------------------------------------------------
class PolicyClient:
    """Sampling and adapter management against one vLLM server. Use as an async context manager."""

    def __init__(
        self,
        base_url: str,
        base_model: str,
        *,
        structured_outputs: StructuredMode = "off",
        max_tokens: int = 256,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
        viewport: Viewport | None = None,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        self.base_model = base_model
        self.structured_outputs = structured_outputs
        self.max_tokens = max_tokens
        self.history_limit = history_limit
        self.viewport = viewport or Viewport()
        self._http = _Http(
            base_url,
            timeout_s=timeout_s,
            connect_timeout_s=connect_timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
        )
        self._current = base_model
        self._in_flight: Counter[str] = Counter()
        self._retiring: set[str] = set()
        self._loaded: set[str] = set()  # adapters this client loaded and has not unloaded
        self._adapter_lock = asyncio.Lock()

    @classmethod
    def from_settings(cls, settings: PolicySettings | None = None, **overrides: Any) -> PolicyClient:
        """The policy service's own client (its warm-up, tests and tools), from ``PolicySettings``.

        The trainer never uses it: it builds its client from ``TrainerSettings``
        (``halo_trainer.worker.policy_client``) and takes sampling settings from each run's config.
        """
        s = settings or PolicySettings()
        kwargs: dict[str, Any] = {
            "structured_outputs": s.resolved_structured_outputs(),
            "max_tokens": s.max_tokens,
            "history_limit": s.history_limit,
            "timeout_s": s.request_timeout_s,
            "connect_timeout_s": s.connect_timeout_s,
            "max_retries": s.max_retries,
            "backoff_s": s.retry_backoff_s,
        }
        kwargs.update(overrides)
        return cls(s.base_url, s.served_model_name, **kwargs)

    @property
    def base_url(self) -> str:
        return self._http.base_url

    @property
    def current_model(self) -> str:
        """The served name new requests use: the newest adapter, or the base model."""
        return self._current

    def in_flight(self, model: str) -> int:
        return self._in_flight[model]

    async def __aenter__(self) -> PolicyClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- health -----------------------------------------------------------------------------------
    async def health(self) -> None:
        """Raise unless the engine is alive: ``PolicyEngineDead`` on 503, ``PolicyUnavailable`` if down."""
        try:
            await self._http.request("GET", "/health", retry=False, timeout_s=10.0)
        except PolicyServerError as exc:
            if exc.status == 503:
                raise PolicyEngineDead(
                    f"policy server at {self.base_url} is up but its engine is dead (/health 503); restart it"
                ) from exc
            raise

    async def wait_ready(self, timeout_s: float = 600.0, poll_s: float = 1.0) -> None:
        """Poll ``/health`` until it answers 200 (server start takes ~30 s on the CPU)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                await self.health()
                return
            except (PolicyUnavailable, PolicyTimeout, PolicyServerError) as exc:
                if time.monotonic() > deadline:
                    raise PolicyUnavailable(
                        f"policy server at {self.base_url} not ready after {timeout_s:.0f}s: {exc}"
                    ) from exc
            await asyncio.sleep(poll_s)

    async def models(self) -> list[dict[str, Any]]:
        """``/v1/models``: the base model and every loaded adapter (``parent`` = base)."""
        response = await self._http.request("GET", "/v1/models")
        return list(response.json().get("data", []))

    # -- sampling ---------------------------------------------------------------------------------
    def request_body(
        self,
        screenshots: Sequence[bytes],
        goal: str,
        history: Sequence[str | Action],
        *,
        n: int,
        temperature: float,
        seed: int | None,
        model: str,
        top_p: float = 1.0,
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        sampling: SamplingParams | None = None,
    ) -> dict[str, Any]:
        """The chat request; ``sampling`` (a run's) replaces the client's defaults for this call."""
        viewport, history_limit = self.viewport, self.history_limit
        structured, budget = self.structured_outputs, self.max_tokens
        if sampling is not None:
            viewport, history_limit = sampling.viewport, sampling.history_limit
            structured, budget = sampling.structured_outputs, sampling.max_tokens
        body: dict[str, Any] = {
            "model": model,
            "messages": openai_messages(goal, history, screenshots, viewport=viewport, history_limit=history_limit),
            "n": n,
            "temperature": temperature,
            "top_p": top_p,
            "max_tokens": max_tokens or budget,
            "logprobs": True,
            "return_token_ids": True,
            # The prompt is rendered exactly once, by the model's chat template; nothing extra.
            "add_generation_prompt": True,
        }
        if seed is not None:
            body["seed"] = seed  # vLLM gives sample i the seed `seed + i`
        if structured == "regex":
            body["structured_outputs"] = {"regex": tool_call_regex()}
        elif structured == "json":
            body["structured_outputs"] = {"json": tool_call_json_schema()}
        body.update(extra_body or {})
        return body

    @contextlib.asynccontextmanager
    async def _using(self, model: str | None) -> AsyncIterator[str]:
        name = model or self._current
        self._in_flight[name] += 1
        try:
            yield name
        finally:
            self._in_flight[name] -= 1
            if self._in_flight[name] <= 0:
                del self._in_flight[name]
                if name in self._retiring:
                    await self._unload_quietly(name)

    async def sample_actions(
        self,
        screenshot_png: bytes | Sequence[bytes],
        goal: str,
        history: Sequence[str | Action] = (),
        n: int = 8,
        temperature: float = 1.0,
        seed: int | None = None,
        *,
        model: str | None = None,
        top_p: float = 1.0,
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        sampling: SamplingParams | None = None,
    ) -> SampleResult:
        """``n`` candidate actions for one state, in one request.

        ``screenshot_png`` is the current screenshot, or a sequence of screenshots oldest first
        (previous ones, then the current one). ``model`` defaults to the current adapter.
        ``extra_body`` adds vLLM sampling fields (``min_tokens``, ``top_k``, ``stop``...).
        ``sampling``: the run's prompt and grammar settings, in place of the client's defaults.
        """
        if n < 1:
            raise ValueError("n must be >= 1")
        shots = [screenshot_png] if isinstance(screenshot_png, bytes | bytearray) else list(screenshot_png)
        async with self._using(model) as name:
            body = self.request_body(
                shots,
                goal,
                history,
                n=n,
                temperature=temperature,
                seed=seed,
                model=name,
                top_p=top_p,
                max_tokens=max_tokens,
                extra_body=extra_body,
                sampling=sampling,
            )
            started = time.perf_counter()
            response = await self._chat(body)
            latency = time.perf_counter() - started
        data = response.json()
        choices = sorted(data.get("choices", []), key=lambda c: c.get("index", 0))
        if len(choices) != n or data.get("prompt_token_ids") is None:
            raise PolicyServerError(f"expected {n} choices with prompt_token_ids, got {len(choices)}")
        return SampleResult(
            model=data.get("model", name),
            prompt_token_ids=list(data["prompt_token_ids"]),
            candidates=[_parse_candidate(i, c) for i, c in enumerate(choices)],
            latency_s=latency,
        )

    async def sample_single(
        self,
        screenshot_png: bytes | Sequence[bytes],
        goal: str,
        history: Sequence[str | Action] = (),
        *,
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> tuple[Candidate, list[int]]:
        """One greedy answer (evaluation): the candidate and the prompt token ids."""
        result = await self.sample_actions(
            screenshot_png, goal, history, n=1, temperature=0.0, seed=0, model=model, max_tokens=max_tokens
        )
        return result.candidates[0], result.prompt_token_ids

    async def _chat(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return await self._http.request("POST", "/v1/chat/completions", json=body)
        except PolicyServerError as exc:
            # A 5xx may mean the engine died under us: say so instead of a bare 500.
            try:
                await self.health()
            except PolicyError as dead:
                raise PolicyEngineDead(f"{exc}; then {dead}") from exc
            raise

    # -- adapters ---------------------------------------------------------------------------------
    async def load_adapter(self, name: str, path: str) -> float:
        """Load a PEFT adapter under a new name; returns the seconds the load took.

        Refuses a name that is already served: a policy version is immutable, reloading a name in
        place would serve stale prefix-cache entries (see docs/policy.md).
        """
        served = {m["id"] for m in await self.models()}
        if name in served:
            raise PolicyBadRequest(f"adapter {name!r} is already loaded; a new version needs a new name")
        started = time.perf_counter()
        try:
            # Not retried blindly: a load whose answer was lost may have happened; check instead.
            await self._http.request(
                "POST", "/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(path)}, retry=False
            )
        except (PolicyUnavailable, PolicyTimeout):
            if name not in {m["id"] for m in await self.models()}:
                raise
        elapsed = time.perf_counter() - started
        self._loaded.add(name)
        logger.info("loaded adapter %s from %s in %.3fs", name, path, elapsed)
        return elapsed

    async def unload_adapter(self, name: str) -> None:
        """Unload now (callers who manage versions themselves; ``publish_adapter`` waits for in-flight use)."""
        try:
            await self._http.request("POST", "/v1/unload_lora_adapter", json={"lora_name": name})
        except PolicyModelNotFound:
            logger.info("adapter %s was not loaded (already unloaded?)", name)
        self._loaded.discard(name)
        self._retiring.discard(name)

    async def publish_adapter(self, name: str, path: str, *, retire_previous: bool = True) -> float:
        """Load ``name`` (``<run>-v<k>``), make it current, retire the previous current adapter.

        The previous adapter is unloaded as soon as no in-flight request *of this client* uses it.
        Requests of other processes are invisible here: a publisher whose rollout workers sample
        with their own clients, or that accepts rollouts of older versions (bounded staleness),
        passes ``retire_previous=False`` and unloads old versions itself (``unload_adapter``).
        Returns the load time in seconds.
        """
        async with self._adapter_lock:
            elapsed = await self.load_adapter(name, path)
            previous, self._current = self._current, name
            if retire_previous and previous != self.base_model and previous != name:
                self._retiring.add(previous)
                if self._in_flight[previous] == 0:
                    await self._unload_quietly(previous)
            return elapsed

    def use_base_model(self) -> None:
        """Send new requests to the base model (evaluation of version 0); adapters stay loaded."""
        self._current = self.base_model

    async def _unload_quietly(self, name: str) -> None:
        try:
            await self.unload_adapter(name)
            logger.info("unloaded retired adapter %s", name)
        except PolicyError as exc:  # the next publish retries; never fail a sampling call for this
            logger.warning("could not unload retired adapter %s: %s", name, exc)


# --- OpenAI API (gpt baseline, MCTS critic) -------------------------------------------------------
class OpenAIChatClient:
    """Chat completions against the OpenAI API (or any compatible server), for the `gpt` baseline
    mode and the MCTS self-critique. Without an API key ``enabled`` is False and calls raise
    ``PolicyDisabled`` with a message naming the setting."""

    def __init__(
        self,
        api_key: str,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        viewport: Viewport | None = None,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
    ) -> None:
        self.model = model
        self.enabled = bool(api_key)
        self.viewport = viewport or Viewport()
        self.history_limit = history_limit
        self._http = (
            _Http(
                base_url,
                timeout_s=timeout_s,
                connect_timeout_s=min(10.0, timeout_s),
                max_retries=max_retries,
                backoff_s=backoff_s,
                headers={"Authorization": f"Bearer {api_key}"},
                what="OpenAI API",
            )
            if self.enabled
            else None
        )

    @classmethod
    def from_settings(cls, settings: PolicySettings | None = None) -> OpenAIChatClient:
        s = settings or PolicySettings()
        return cls(
            s.openai_api_key.get_secret_value(),
            s.openai_model,
            base_url=s.openai_base_url,
            timeout_s=s.openai_timeout_s,
            max_retries=s.max_retries,
            history_limit=s.history_limit,
        )

    async def __aenter__(self) -> OpenAIChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    async def chat(self, messages: list[dict[str, Any]], *, temperature: float = 0.0, max_tokens: int = 512) -> str:
        """One completion's text (the MCTS critic sends its own messages)."""
        if self._http is None:
            raise PolicyDisabled("the OpenAI client is disabled: set HALO_POLICY_OPENAI_API_KEY to use it")
        body = {"model": self.model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens}
        data = (await self._http.request("POST", "/chat/completions", json=body)).json()
        return (data["choices"][0]["message"].get("content")) or ""

    async def sample_action(
        self,
        screenshot_png: bytes | Sequence[bytes],
        goal: str,
        history: Sequence[str | Action] = (),
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ) -> Candidate:
        """The `gpt` baseline: one action from the same prompt the policy sees (no token ids)."""
        shots = [screenshot_png] if isinstance(screenshot_png, bytes | bytearray) else list(screenshot_png)
        messages = openai_messages(goal, history, shots, viewport=self.viewport, history_limit=self.history_limit)
        text = await self.chat(messages, temperature=temperature, max_tokens=max_tokens)
        parsed = parse_action(text)
        action, error = (parsed, None) if isinstance(parsed, Action) else (None, parsed)
        return Candidate(index=0, text=text, action=action, parse_error=error, token_ids=[], logprobs=[])
