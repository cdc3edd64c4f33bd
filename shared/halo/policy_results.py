"""What a policy sample returns: the candidates of one request, as vLLM's choices are parsed.

Each ``Candidate`` carries what online RL needs: the raw text, the parsed action (or why it is not
one), the completion token ids and the per-token behaviour log-probs; ``SampleResult`` adds the
prompt token ids (vLLM's ``return_token_ids``) and the served name that answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from halo.actions import parse_action
from halo.policy_errors import SERVICE
from halo.schemas.actions import Action, ActionParseError
from halo.transport import ServiceFailed


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
    replica: str | None = None  # the policy replica that answered (None: the one server at policy_url)


def candidate_from_choice(index: int, choice: dict[str, Any]) -> Candidate:
    """The candidate of one of vLLM's chat ``choices``; ``ServiceFailed`` when its token ids and
    log-probs do not pair up."""
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
