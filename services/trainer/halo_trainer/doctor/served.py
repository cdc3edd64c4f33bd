"""Check 1: the served model answers a screenshot prompt, as a run asks it, with an action that parses."""

from __future__ import annotations

from halo.policy_client import PolicyClient
from halo.schemas import SamplingParams
from halo.schemas.doctor import DoctorCheck
from halo_trainer.doctor.samples import Screen


async def served_model(policy: PolicyClient, screen: Screen, sampling: SamplingParams) -> DoctorCheck:
    """One greedy answer under the run's prompt and grammar settings (``sampling``)."""
    result = await policy.sample_actions(screen.png, screen.goal, n=1, temperature=0.0, seed=0, sampling=sampling)
    answer = result.candidates[0]
    shown = answer.text.strip().replace("\n", " ")[:80]
    if answer.action is None:
        return DoctorCheck(
            name="served model",
            ok=False,
            figure=result.latency_s,
            unit="s",
            detail=f"answered {shown!r}: {answer.parse_error.reason.value}, not an action",
            fix="vLLM serves a model that answers no computer_use tool call: check HALO_POLICY_MODEL "
            "(and structured_outputs in the run defaults)",
        )
    return DoctorCheck(
        name="served model",
        ok=True,
        figure=result.latency_s,
        unit="s",
        detail=f"{result.model} answered {answer.action.action.value} on {screen.source}",
    )
