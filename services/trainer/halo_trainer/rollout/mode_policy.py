"""An agent mode (``halo.modes``) as the policy a rollout samples from.

The vLLM modes use the trainer's own policy client: ``qwen3vl_base`` the served base model, the
adapter modes their promoted adapter, loaded under the mode's name when vLLM does not serve it yet.
The gpt modes wrap the OpenAI-compatible client in the rollout's ``sample_actions`` interface: the
same prompt and parser, one answer per request, no token ids (nothing learns from them).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from halo.modes import Mode, ModeError, get_mode, openai_model, promoted_adapter
from halo.openai_client import OpenAIChatClient
from halo.policy_client import PolicyClient, SampleResult
from halo.schemas import PolicyVersion, SamplingParams
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo.transport import CallError, ServiceRejected
from halo_trainer.rollout.services import policy_client


class OpenAIPolicy:
    """``sample_actions`` over a chat API: n requests of one answer each (``seed`` is not sent)."""

    def __init__(self, client: OpenAIChatClient) -> None:
        self.client = client

    async def sample_actions(
        self,
        screenshot_png: bytes,
        goal: str,
        history: Sequence[str],
        *,
        n: int,
        temperature: float,
        seed: int,
        model: str,
        sampling: SamplingParams,
        job_id: str | None = None,
        run_id: str | None = None,
    ) -> SampleResult:
        # job_id and run_id place a request on a policy replica: one API has nothing to place.
        started = time.perf_counter()
        candidates = []
        for i in range(n):
            answer = await self.client.sample_action(
                screenshot_png, goal, history, temperature=temperature, max_tokens=sampling.max_tokens
            )
            candidates.append(answer.model_copy(update={"index": i}))
        return SampleResult(
            model=self.client.model, prompt_token_ids=[], candidates=candidates, latency_s=time.perf_counter() - started
        )

    async def aclose(self) -> None:
        await self.client.aclose()


def served_name(mode: Mode, trainer: TrainerSettings, settings: EvalSettings) -> str:
    """What answers for the mode: vLLM's served name or the API's model. Refused modes raise ModeError."""
    if mode.backend == "openai":
        return openai_model(mode, settings)
    if mode.algorithm is None:
        return trainer.policy_model_name
    return promoted_adapter(mode, settings)[1]


@dataclass
class ModePolicy:
    mode: Mode
    policy: PolicyClient | OpenAIPolicy
    version: PolicyVersion

    async def aclose(self) -> None:
        await self.policy.aclose()


async def open_mode(
    name: str, trainer: TrainerSettings, settings: EvalSettings, run_id: str, sampling: SamplingParams
) -> ModePolicy:
    """The mode ready to sample: its adapter loaded, or its API answering our key and model."""
    mode = get_mode(name)
    served = served_name(mode, trainer, settings)
    version = PolicyVersion(run_id=run_id, version=0, adapter_name=served, created_at=time.time())
    if mode.backend == "openai":
        client = OpenAIChatClient.from_settings(
            settings, served, viewport=sampling.viewport, history_limit=sampling.history_limit
        )
        try:
            # One token, so a refused key or an unknown model stops the evaluation before it starts.
            await client.chat([{"role": "user", "content": "Say OK."}], max_tokens=1)
        except ServiceRejected as exc:
            await client.aclose()
            raise ModeError(f"mode {name}: {settings.openai_base_url} refused the request ({exc})") from exc
        except CallError as exc:
            await client.aclose()
            raise ModeError(f"mode {name}: no usable answer from {settings.openai_base_url} ({exc})") from exc
        return ModePolicy(mode, OpenAIPolicy(client), version)
    policy = policy_client(trainer)
    if mode.algorithm is not None:
        folder, _ = promoted_adapter(mode, settings)
        try:
            if served not in {m.get("id") for m in await policy.models()}:
                await policy.load_adapter(served, str(folder.resolve()))
        except CallError as exc:
            await policy.aclose()
            raise ModeError(f"mode {name}: vLLM did not load the adapter {folder} ({exc})") from exc
        version = version.model_copy(update={"version": 1, "adapter_path": str(folder)})
    return ModePolicy(mode, policy, version)
