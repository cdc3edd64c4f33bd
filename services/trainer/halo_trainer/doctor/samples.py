"""What the checks sample from: a real screenshot from the env service (a task's first page), or a
drawn one when the env cannot give one; and vLLM's candidates turned into the transitions the
trainer's own batching takes (``learner.batching.learner_batch``)."""

from __future__ import annotations

import io
from dataclasses import dataclass

from halo.clients import EnvClient
from halo.policy_results import Candidate, SampleResult
from halo.schemas import PromptRecord, RewardBreakdown, SamplingParams, Transition, Viewport

DRAWN_GOAL = "Open the Compose window and write to Bob"


@dataclass
class Screen:
    png: bytes
    goal: str
    source: str  # where the screenshot came from, for the report


async def env_screen(env: EnvClient, domain: str) -> Screen:
    """The first page of ``domain``'s first reachable local task, as a rollout sees it (the session is closed after)."""
    probed = await env.reachability(domain)
    task = next((r.task_id for r in probed if r.reachable and r.backend == "local"), None)
    if task is None:
        why = probed[0].reason if probed else f"the env service lists no {domain} task"
        raise LookupError(f"no reachable {domain} task ({why})")
    reset = await env.reset(task, seed=0, max_steps=1, run_id="doctor")
    try:
        png = await env.screenshot(reset.observation.screenshot.sha256)
    finally:
        await env.close(reset.observation.session_id)
    return Screen(png, reset.observation.goal, f"{task}'s first page (env service)")


def drawn_screen(viewport: Viewport) -> Screen:
    """A mail-like page drawn here, at the run's viewport: the checks after it still run without the env."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (viewport.width, viewport.height), (246, 248, 252))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, viewport.width, 64), fill=(255, 255, 255), outline=(221, 221, 221))
    draw.text((24, 24), "GoMail", fill=(0, 0, 0))
    draw.rounded_rectangle((16, 80, 180, 130), radius=16, fill=(194, 231, 255))
    draw.text((56, 98), "Compose", fill=(0, 0, 0))
    for i, line in enumerate(("Alice  Quarterly report", "Bob  Lunch on Friday?", "Carol  Your order has shipped")):
        draw.text((260, 96 + 48 * i), line, fill=(0, 0, 0))
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return Screen(buf.getvalue(), DRAWN_GOAL, "drawn here (the env service gave none)")


def transitions(
    result: SampleResult, candidates: list[Candidate], screen: Screen, sha256: str, sampling: SamplingParams
) -> list[Transition]:
    """``candidates`` of ``result`` as a step group's transitions (no reward: nothing scores them)."""
    prompt = PromptRecord(goal=screen.goal, screenshot_sha256=sha256, prompt_token_ids=result.prompt_token_ids)
    out = []
    for c in candidates:
        tid = f"doctor-{c.index}"
        out.append(
            Transition(
                transition_id=tid,
                run_id="doctor",
                job_id="doctor",
                episode_id=tid,
                group_id="doctor",
                task_id="doctor",
                step=0,
                policy_version=0,
                prompt=prompt,
                completion_text=c.text,
                completion_token_ids=c.token_ids,
                behaviour_logprobs=c.logprobs,
                sampling=sampling,
                action=c.action,
                parse_error=c.parse_error,
                reward=RewardBreakdown(transition_id=tid),
            )
        )
    return out
