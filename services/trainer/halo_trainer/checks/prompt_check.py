"""The run-start prompt check: does the learner rebuild the prompt vLLM tokenises?

The learner rebuilds every sampled prompt with its own processor and refuses a batch whose token
ids differ from vLLM's (``halo_model.inputs.PromptMismatch``): a wrong log-prob is worse than none.
A setting that differs between the two sides (the image budget ``max_pixels``, the model folder's
chat template or tokenizer) would therefore fail every update, minutes into a run. Asking vLLM for
one short greedy answer on a blank screenshot of the run's viewport and comparing its prompt token
ids with the learner's rebuild finds it before any job, with the numbers that say which side differs.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

from halo.policy_client import PolicyClient
from halo.prompts import prompt_settings
from halo.schemas.rollout import SamplingParams
from halo_model.inputs import prompt_inputs

PROBE_GOAL = "Check that the learner sees the prompt vLLM sees."


class PromptCheckFailed(RuntimeError):
    """The served policy is not the one the learner would train (another prompt, vision keys
    dropped): a settings problem, so the run fails with this message and no stack trace."""


def blank_screenshot(width: int, height: int) -> bytes:
    """A white PNG of the viewport's size: as many image tokens as a real screenshot of that size."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, format="PNG")
    return out.getvalue()


async def served_prompt_problem(
    policy: PolicyClient, processor: Any, sampling: SamplingParams, model: str
) -> str | None:
    """None when the learner's rebuild of a probe prompt equals vLLM's, else what differs.

    Raises the policy client's ``CallError`` when vLLM cannot be asked."""
    png = blank_screenshot(sampling.viewport.width, sampling.viewport.height)
    result = await policy.sample_actions(
        png, PROBE_GOAL, n=1, temperature=0.0, seed=0, model=model, max_tokens=8, sampling=sampling
    )
    enc = await asyncio.to_thread(prompt_inputs, processor, PROBE_GOAL, [], [png], **prompt_settings(sampling))
    mine = enc["input_ids"][0].tolist()
    served = result.prompt_token_ids
    if mine == served:
        return None
    image_id = getattr(processor, "image_token_id", None)
    return (
        f"the learner rebuilds a prompt of {len(mine)} tokens ({mine.count(image_id)} image tokens) where vLLM "
        f"tokenised {len(served)} ({served.count(image_id)} image tokens): the image budget must be the same on "
        "both sides (HALO_TRAINER_MAX_PIXELS = HALO_POLICY_MAX_PIXELS; Compose sets both from HALO_MAX_PIXELS), "
        "and so must the model folder (HALO_TRAINER_MODEL = HALO_POLICY_MODEL)"
    )
