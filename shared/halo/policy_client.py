"""Async client for the policy: vLLM's OpenAI-compatible server.

``PolicyClient.sample_actions`` asks for ``n`` candidate actions at one state in one request and
returns, per candidate, what online RL needs: the raw text, the parsed action (or why it is not
one), the completion token ids, the per-token behaviour log-probs and the prompt token ids (vLLM's
``return_token_ids``). The prompt comes from ``halo.prompts`` so the learner can rebuild it.

Sampling: every request names the temperature and sets every other field that shapes the
distribution to vLLM's neutral value (``NEUTRAL_SAMPLING``: no top-k, top-p or min-p cut, no
penalties), and the server ignores the model's generation_config.json (``--generation-config
vllm``). The distribution sampled from is then the model's softmax at the temperature (under the
structured-output grammar when one is asked), which is what the learner scores.

Behaviour log-probs are vLLM's ``processed_logprobs`` (the server's ``--logprobs-mode``): the
log-softmax of the logits vLLM sampled from, after the grammar mask and the temperature. The learner
computes the same quantity (``halo_model.logprobs`` at the run's temperature, the grammar replayed),
so the importance ratio compares like with like. Greedy requests (temperature 0) come back with
log-probs at temperature 1; nothing scores them.

Adapters: each policy version is loaded under a new name ``<run>-v<k>`` and made current; the
publisher unloads old versions itself, because only it knows which versions rollouts (of any
process) may still use. A name is never reloaded in place: vLLM's in-place reload keeps a prefix
cache keyed by the name.

Full weights (a run that trains modules LoRA cannot reach, the vision tower say): ``publish_weights``
serves new base weights and the new adapter as one version, under a pause, and unloads every older
adapter (their base weights are gone). It needs vLLM's dev-mode routes
(``HALO_POLICY_WEIGHT_RELOAD``); ``weight_reload_available`` says whether the server has them.

Errors and retries are ``halo.transport``'s; ``EngineDead`` says the server answers but its engine
process died (restart it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from halo.actions import parse_action, tool_call_json_schema
from halo.prompts import DEFAULT_HISTORY_LIMIT, openai_messages, tool_call_regex
from halo.schemas.actions import Action, ActionParseError
from halo.schemas.env import Viewport
from halo.schemas.rollout import SamplingParams, StructuredMode
from halo.settings.policy import PolicySettings
from halo.transport import CallError, NotFound, ServiceFailed, ServiceRejected, ServiceUnavailable, Transport

logger = logging.getLogger(__name__)

SERVICE = "policy server"


# vLLM's values that leave the model's distribution as it is (vllm.SamplingParams' defaults; top_k 0
# is "off" there, -1 too). Sent explicitly so neither a server default nor a model's
# generation_config.json can change what was sampled behind the learner's back.
NEUTRAL_SAMPLING: dict[str, float | int] = {
    "top_p": 1.0,
    "top_k": 0,
    "min_p": 0.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "repetition_penalty": 1.0,
}


class EngineDead(ServiceFailed):
    """The HTTP server answers but ``/health`` is 503: the engine process died; restart the server."""


class SampleAborted(ServiceUnavailable):
    """vLLM aborted the request: it queued while new weights were loaded (``publish_weights``) and
    named a version those weights replaced. Nothing was sampled; ask again with the current version."""


# --- results --------------------------------------------------------------------------------------
class Candidate(BaseModel):
    """One sampled answer. Exactly one of ``action`` and ``parse_error`` is set."""

    model_config = ConfigDict(frozen=True)

    index: int
    text: str
    action: Action | None
    parse_error: ActionParseError | None
    token_ids: list[int]
    logprobs: list[float]  # one per token in token_ids: behaviour log-probs at the request's temperature
    finish_reason: str | None = None

    @classmethod
    def parse(
        cls,
        index: int,
        text: str,
        token_ids: Sequence[int] = (),
        logprobs: Sequence[float] = (),
        finish_reason: str | None = None,
    ) -> Candidate:
        """The candidate for the answer ``text``: its action, or why it is not one."""
        parsed = parse_action(text)
        action, error = (parsed, None) if isinstance(parsed, Action) else (None, parsed)
        return cls(
            index=index,
            text=text,
            action=action,
            parse_error=error,
            token_ids=list(token_ids),
            logprobs=list(logprobs),
            finish_reason=finish_reason,
        )


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
        raise ServiceFailed(
            SERVICE,
            f"candidate {index}: {len(token_ids)} token ids but {len(logprobs)} logprobs; "
            "is the server a vLLM with return_token_ids support?",
        )
    return Candidate.parse(index, text, token_ids, logprobs, choice.get("finish_reason"))


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
        self._http = Transport(
            SERVICE,
            base_url,
            timeout_s=timeout_s,
            connect_timeout_s=connect_timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            start_hint="python -m halo_policy",
        )
        self._current = base_model

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

    async def __aenter__(self) -> PolicyClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- health -----------------------------------------------------------------------------------
    async def health(self) -> None:
        """Raise unless the engine is alive: ``EngineDead`` on 503, ``ServiceUnavailable`` if down."""
        try:
            await self._http.request("GET", "/health", retry=False, timeout_s=10.0)
        except ServiceFailed as exc:
            if exc.status == 503:
                raise EngineDead(
                    SERVICE, f"policy server at {self.base_url} is up but its engine is dead (/health 503); restart it"
                ) from exc
            raise

    async def wait_ready(self, timeout_s: float = 600.0, poll_s: float = 1.0) -> None:
        """Poll ``/health`` until it answers 200 (server start takes ~30 s on the CPU)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                await self.health()
                return
            except EngineDead:
                raise  # a dead engine does not come back by waiting
            except (ServiceUnavailable, ServiceFailed) as exc:
                if time.monotonic() > deadline:
                    raise ServiceUnavailable(
                        SERVICE, f"policy server at {self.base_url} not ready after {timeout_s:.0f}s: {exc}"
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
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        sampling: SamplingParams | None = None,
    ) -> dict[str, Any]:
        """The chat request; ``sampling`` (a run's) replaces the client's defaults for this call.

        ``extra_body`` may add vLLM fields but not replace the temperature or a ``NEUTRAL_SAMPLING``
        field: the learner reproduces the temperature alone (``ValueError`` names the field).
        """
        fixed = sorted(set(extra_body or {}) & {"temperature", *NEUTRAL_SAMPLING})
        if fixed:
            raise ValueError(
                f"extra_body sets {', '.join(fixed)}: sampling is the temperature with every other field neutral, "
                "the distribution the learner scores; these cannot be changed per request"
            )
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
            **NEUTRAL_SAMPLING,
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
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        sampling: SamplingParams | None = None,
    ) -> SampleResult:
        """``n`` candidate actions for one state, in one request.

        ``screenshot_png`` is the current screenshot, or a sequence of screenshots oldest first
        (previous ones, then the current one). ``model`` defaults to the current adapter.
        ``extra_body`` adds vLLM fields (``min_tokens``, ``ignore_eos``, ``stop``...), never one that
        reshapes the distribution (``request_body``).
        ``sampling``: the run's prompt and grammar settings, in place of the client's defaults.
        """
        if n < 1:
            raise ValueError("n must be >= 1")
        shots = [screenshot_png] if isinstance(screenshot_png, bytes | bytearray) else list(screenshot_png)
        name = model or self._current
        body = self.request_body(
            shots,
            goal,
            history,
            n=n,
            temperature=temperature,
            seed=seed,
            model=name,
            max_tokens=max_tokens,
            extra_body=extra_body,
            sampling=sampling,
        )
        started = time.perf_counter()
        response = await self._chat(body)
        latency = time.perf_counter() - started
        data = response.json()
        choices = sorted(data.get("choices", []), key=lambda c: c.get("index", 0))
        if any(c.get("finish_reason") == "abort" for c in choices):
            raise SampleAborted(SERVICE, f"request for {name!r} aborted by a weight sync; sample again")
        if len(choices) != n or data.get("prompt_token_ids") is None:
            raise ServiceFailed(SERVICE, f"expected {n} choices with prompt_token_ids, got {len(choices)}")
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

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        model: str | None = None,
        temperature: float = 0.0,
        regex: str | None = None,
    ) -> str:
        """One answer's text to the caller's own messages (the MCTS self-critique), optionally
        constrained to ``regex`` by vLLM's structured outputs; ``model`` defaults to the current one."""
        body: dict[str, Any] = {
            "model": model or self._current,
            "messages": messages,
            "n": 1,
            "temperature": temperature,
            **NEUTRAL_SAMPLING,
            "max_tokens": max_tokens,
            "add_generation_prompt": True,
        }
        if regex is not None:
            body["structured_outputs"] = {"regex": regex}
        response = await self._chat(body)
        try:
            return response.json()["choices"][0]["message"].get("content") or ""
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise ServiceFailed(SERVICE, f"an answer without choices[0].message: {response.text[:300]}") from exc

    async def _chat(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return await self._http.request("POST", "/v1/chat/completions", json=body)
        except ServiceFailed as exc:
            # A 5xx may mean the engine died under us: say so instead of a bare 500.
            try:
                await self.health()
            except CallError as dead:
                raise EngineDead(SERVICE, f"{exc}; then {dead}", exc.status) from exc
            raise

    # -- adapters ---------------------------------------------------------------------------------
    async def load_adapter(self, name: str, path: str) -> float:
        """Load a PEFT adapter under a new name; returns the seconds the load took.

        Refuses a name that is already served: a policy version is immutable, reloading a name in
        place would serve stale prefix-cache entries (see docs/policy.md).
        """
        served = {m["id"] for m in await self.models()}
        if name in served:
            raise ServiceRejected(SERVICE, f"adapter {name!r} is already loaded; a new version needs a new name")
        started = time.perf_counter()
        try:
            # Not retried blindly: a load whose answer was lost may have happened; check instead.
            await self._http.request(
                "POST", "/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(path)}, retry=False
            )
        except ServiceUnavailable:
            if name not in {m["id"] for m in await self.models()}:
                raise
        elapsed = time.perf_counter() - started
        logger.info("loaded adapter %s from %s in %.3fs", name, path, elapsed)
        return elapsed

    async def unload_adapter(self, name: str) -> None:
        """Unload an adapter (a version no rollout may use any more)."""
        try:
            await self._http.request("POST", "/v1/unload_lora_adapter", json={"lora_name": name})
        except NotFound:
            logger.info("adapter %s was not loaded (already unloaded?)", name)

    async def publish_adapter(self, name: str, path: str) -> float:
        """Load ``name`` (``<run>-v<k>``) and make it current; returns the load time in seconds.

        The previous version stays loaded: rollouts in flight (in this or other processes) and
        accepted stale ones may still use it; the publisher unloads it (``unload_adapter``).
        """
        elapsed = await self.load_adapter(name, path)
        self._current = name
        return elapsed

    # -- full weights -----------------------------------------------------------------------------
    async def weight_reload_available(self) -> bool:
        """Whether the server has the routes ``publish_weights`` needs (vLLM in dev mode,
        ``HALO_POLICY_WEIGHT_RELOAD``): a GET on the POST-only ``/collective_rpc`` answers 405 when
        the route exists and 404 when it does not; nothing is changed on the server."""
        try:
            await self._http.request("GET", "/collective_rpc", retry=False, timeout_s=10.0)
        except NotFound:
            return False
        except ServiceRejected as exc:
            return exc.status == 405
        return True

    async def publish_weights(
        self,
        name: str,
        adapter_path: str,
        weights_path: str,
        *,
        before_resume: Callable[[], Awaitable[object]] | None = None,
    ) -> dict[str, float]:
        """Serve new base weights (a model folder) together with adapter ``name``, one version.

        1. ``/pause?mode=wait``: requests in flight finish on the old weights; new ones queue,
        2. ``reload_weights`` from ``weights_path`` in place (``/collective_rpc``; vLLM then drops its
           encoder, multimodal and LoRA caches, and the pause cleared the prefix cache),
        3. load adapter ``name``, make it current, and unload every other adapter: a request that
           names an older version from now on gets a 404 instead of mixing old LoRA and new weights,
        4. ``before_resume`` (the publisher makes ``name`` current for its workers), abort what
           queued during the pause (it named an older version; ``sample_actions`` raises
           ``SampleAborted``), then ``/resume``.
        The server stays paused for no longer than these steps: resume runs on any failure.
        Returns the seconds of each step (``pause_s``, ``reload_s``, ``adapter_s``, ``total_s``).
        """
        started = time.perf_counter()
        async with self._paused():
            paused = time.perf_counter()
            await self._reload(weights_path)
            reloaded = time.perf_counter()
            served = {m["id"] for m in await self.models()}
            if name not in served:
                await self.load_adapter(name, adapter_path)
            self._current = name
            for other in served - {name, self.base_model}:
                await self.unload_adapter(other)
            loaded = time.perf_counter()
            if before_resume is not None:
                await before_resume()
            await self._http.request("POST", "/abort_requests", json={}, retry=False)
        done = time.perf_counter()
        logger.info("weights %s and adapter %s served in %.3fs", weights_path, name, done - started)
        return {
            "pause_s": paused - started,
            "reload_s": reloaded - paused,
            "adapter_s": loaded - reloaded,
            "total_s": done - started,
        }

    async def reload_weights(self, weights_path: str) -> float:
        """Reload the base weights alone (no version change: a restore, a test); returns seconds.
        Under a pause like ``publish_weights``: see ``_paused`` for why a bare reload is unsafe."""
        started = time.perf_counter()
        async with self._paused():
            await self._reload(weights_path)
        return time.perf_counter() - started

    @contextlib.asynccontextmanager
    async def _paused(self) -> AsyncIterator[None]:
        """Inside: the server paused by ``/pause?mode=wait&clear_cache=true`` (requests in flight
        drained, new ones queued, the engine's caches cleared); ``/resume`` on the way out, also on a
        failure. The clearing is not optional: ``reload_weights`` empties the worker's encoder cache
        but not the scheduler's record of it, and the next request with an image seen before then
        kills the engine ("Encoder cache miss"); the pause clears both sides."""
        await self._http.request(
            "POST", "/pause", params={"mode": "wait", "clear_cache": "true"}, retry=False, timeout_s=600.0
        )
        try:
            yield
        finally:
            await self._http.request("POST", "/resume", retry=True)

    async def _reload(self, weights_path: str) -> None:
        await self._http.request(
            "POST",
            "/collective_rpc",
            json={"method": "reload_weights", "kwargs": {"weights_path": str(weights_path)}},
            retry=False,
            timeout_s=600.0,
        )

    def use_base_model(self) -> None:
        """Send new requests to the base model (evaluation of version 0); adapters stay loaded."""
        self._current = self.base_model
