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

Adapters and full weights (publishing a policy version, ``publish_adapter`` and ``publish_weights``)
are ``halo.policy_publishing``, a part of ``PolicyClient``; the candidates and results are
``halo.policy_results``.

Errors and retries are ``halo.transport``'s; ``EngineDead`` says the server answers but its engine
process died (restart it), ``SampleAborted`` that a weight sync dropped the request, ``WrongAdapter``
that another version than the one asked answered (all ``halo.policy_errors``).

Several servers behind one policy (``halo.policy_replicated``) are a subclass: it changes where a
request goes (``_answer``) and how versions reach the servers, not what a sample is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import httpx

from halo.actions import tool_call_json_schema
from halo.policy_errors import SERVICE, EngineDead, SampleAborted, WrongAdapter
from halo.policy_publishing import PolicyPublishing
from halo.policy_results import Candidate, SampleResult, candidate_from_choice
from halo.prompts import DEFAULT_HISTORY_LIMIT, openai_messages, prompt_settings, tool_call_regex
from halo.schemas.actions import Action
from halo.schemas.env import Viewport
from halo.schemas.rollout import SamplingParams, StructuredMode
from halo.settings.policy import PolicySettings
from halo.transport import CallError, ServiceFailed, ServiceUnavailable, Transport, key_headers
from halo.vllm_chat import post_chat

# The results and errors are re-exported: the trainer (its rollouts, publisher and tests) imports
# them from here, with the client.
__all__ = [
    "NEUTRAL_SAMPLING",
    "Candidate",
    "EngineDead",
    "PolicyClient",
    "SampleAborted",
    "SampleResult",
    "WrongAdapter",
]

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


# --- vLLM policy client ---------------------------------------------------------------------------
class PolicyClient(PolicyPublishing):
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
        api_key: str = "",
    ) -> None:
        """``api_key``: the server's (``HALO_POLICY_API_KEY``), sent with every request; "" = none."""
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
            headers=key_headers(api_key),
            start_hint="python -m halo_policy",
        )
        self._current = base_model

    @classmethod
    def from_settings(cls, settings: PolicySettings | None = None, **overrides: Any) -> PolicyClient:
        """The policy service's own client (its warm-up, tests and tools), from ``PolicySettings``.

        The trainer never uses it: it builds its client from ``TrainerSettings``
        (``halo_trainer.rollout.services.policy_client``) and takes sampling settings from each run's config.
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
            "api_key": s.api_key.get_secret_value(),
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
        prompt: dict[str, Any] = {"viewport": self.viewport, "history_limit": self.history_limit}
        structured, budget = self.structured_outputs, self.max_tokens
        if sampling is not None:
            prompt = prompt_settings(sampling)
            structured, budget = sampling.structured_outputs, sampling.max_tokens
        messages = openai_messages(goal, history, screenshots, **prompt)
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
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
        job_id: str | None = None,
        run_id: str | None = None,
    ) -> SampleResult:
        """``n`` candidate actions for one state, in one request.

        ``screenshot_png`` is the current screenshot, or a sequence of screenshots oldest first
        (previous ones, then the current one). ``model`` defaults to the current adapter.
        ``extra_body`` adds vLLM fields (``min_tokens``, ``ignore_eos``, ``stop``...), never one that
        reshapes the distribution (``request_body``).
        ``sampling``: the run's prompt and grammar settings, in place of the client's defaults.
        ``job_id`` keeps a job's requests on one replica (its forks share the prompt's cache) and
        ``run_id`` says whose counters a replica's failure goes to; one server ignores both.
        An answer from another version than ``model`` raises ``WrongAdapter``.
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
        data, replica = await self._answer(body, job_id=job_id, run_id=run_id)
        latency = time.perf_counter() - started
        answered = str(data.get("model", name))
        if answered != name:
            raise WrongAdapter(SERVICE, f"asked {name!r} but {answered!r} answered{_at(replica)}")
        choices = sorted(data.get("choices", []), key=lambda c: c.get("index", 0))
        if any(c.get("finish_reason") == "abort" for c in choices):
            raise SampleAborted(SERVICE, f"request for {name!r} aborted by a weight sync; sample again")
        if len(choices) != n or data.get("prompt_token_ids") is None:
            raise ServiceFailed(SERVICE, f"expected {n} choices with prompt_token_ids, got {len(choices)}")
        return SampleResult(
            model=answered,
            prompt_token_ids=list(data["prompt_token_ids"]),
            candidates=[candidate_from_choice(i, c) for i, c in enumerate(choices)],
            latency_s=latency,
            replica=replica,
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
        job_id: str | None = None,
        run_id: str | None = None,
    ) -> str:
        """One answer's text to the caller's own messages (the MCTS self-critique), optionally
        constrained to ``regex`` by vLLM's structured outputs; ``model`` defaults to the current one.
        ``job_id`` and ``run_id`` as for ``sample_actions``: a search's critique goes to the replica
        its job samples from, and an answer from another version raises ``WrongAdapter``."""
        name = model or self._current
        body: dict[str, Any] = {
            "model": name,
            "messages": messages,
            "n": 1,
            "temperature": temperature,
            **NEUTRAL_SAMPLING,
            "max_tokens": max_tokens,
            "add_generation_prompt": True,
        }
        if regex is not None:
            body["structured_outputs"] = {"regex": regex}
        data, replica = await self._answer(body, job_id=job_id, run_id=run_id)
        answered = str(data.get("model", name))
        if answered != name:
            raise WrongAdapter(SERVICE, f"asked {name!r} but {answered!r} answered{_at(replica)}")
        try:
            return data["choices"][0]["message"].get("content") or ""
        except (LookupError, TypeError, AttributeError) as exc:
            raise ServiceFailed(SERVICE, f"an answer without choices[0].message: {str(data)[:300]}") from exc

    async def _answer(
        self, body: dict[str, Any], *, job_id: str | None = None, run_id: str | None = None
    ) -> tuple[dict[str, Any], str | None]:
        """The chat answer's JSON and the replica that gave it (None: the one server)."""
        response = await self._chat(body)
        try:
            data = response.json()
        except ValueError as exc:
            raise ServiceFailed(SERVICE, f"an answer that is not JSON: {response.text[:300]}") from exc
        if not isinstance(data, dict):
            raise ServiceFailed(SERVICE, f"an answer that is not a JSON object: {response.text[:300]}")
        return data, None

    async def _chat(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return await post_chat(self._http, body)
        except ServiceFailed as exc:
            # A 5xx may mean the engine died under us: say so instead of a bare 500.
            try:
                await self.health()
            except CallError as dead:
                raise EngineDead(SERVICE, f"{exc}; then {dead}", exc.status) from exc
            raise


def _at(replica: str | None) -> str:
    return "" if replica is None else f" (replica {replica})"
