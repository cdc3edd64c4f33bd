"""Chat completions against the OpenAI API or any compatible server: the gpt modes (``halo.modes``)
and the MCTS self-critique. It sends the prompt the policy sees (``halo.prompts``) and parses the answer
with the policy's parser, over ``halo.transport`` (its errors and retries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from halo.policy_results import Candidate
from halo.prompts import DEFAULT_HISTORY_LIMIT, openai_messages
from halo.schemas.actions import Action
from halo.schemas.env import Viewport
from halo.settings.eval import EvalSettings
from halo.transport import CallError, ServiceFailed, Transport

SERVICE = "OpenAI API"


class OpenAIDisabled(CallError):
    """The client has no API key configured."""


class OpenAIChatClient:
    """Without an API key ``enabled`` is False and calls raise ``OpenAIDisabled`` naming the setting."""

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
            Transport(
                SERVICE,
                base_url,
                timeout_s=timeout_s,
                connect_timeout_s=min(10.0, timeout_s),
                max_retries=max_retries,
                backoff_s=backoff_s,
                headers={"Authorization": f"Bearer {api_key}"},
            )
            if self.enabled
            else None
        )

    @classmethod
    def from_settings(cls, settings: EvalSettings, model: str, **overrides: Any) -> OpenAIChatClient:
        """The client of ``model`` at the API the settings name (the gpt modes of ``halo.modes``)."""
        return cls(
            settings.openai_api_key.get_secret_value(),
            model,
            **{"base_url": settings.openai_base_url, "timeout_s": settings.openai_timeout_s, **overrides},
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
            raise OpenAIDisabled(
                SERVICE, "the OpenAI client is disabled: set HALO_EVAL_OPENAI_API_KEY (or OPENAI_API_KEY) to use it"
            )
        body = {"model": self.model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens}
        response = await self._http.request("POST", "/chat/completions", json=body)
        try:
            return response.json()["choices"][0]["message"].get("content") or ""
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise ServiceFailed(SERVICE, f"an answer without choices[0].message: {response.text[:300]}") from exc

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
        return Candidate.parse(0, await self.chat(messages, temperature=temperature, max_tokens=max_tokens))
