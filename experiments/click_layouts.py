"""Playground click tasks seen from outside the loop: their layouts' screenshots, the first-click
reward, and how much the screenshot moves a learner (``image_sensitivity``).

Shared by ``learning_probe.py`` (``click_task``, ``image_sensitivity``, ``fixed_completion``) and
``vision_diagnostic.py`` (all of it). Nothing here samples or learns: the probe trains in the
trainer's own loop, the diagnostic with ``Learner.update`` on teacher-forced answers.

``layout_reward`` computes, from the click's pixel and the buttons' boxes, what the reward service
pays for a first click (valid 0.1, new state 0.2, 0.3 per near-target ring reached, the submission
milestone 0.3 for a click on any button, wrong ones included, success 10 on the target), with the
service's own weights (configs/rewards); the diagnostic uses it to find the best screenshot-blind
answer.
"""

from __future__ import annotations

import functools
import math

import torch
from playwright.async_api import async_playwright

from halo.actions import LEFT_CLICKS, format_tool_call, to_pixels
from halo.policy_results import Candidate
from halo.schemas import Action, Task, Viewport
from halo.settings.env import EnvSettings
from halo.settings.reward import RewardSettings
from halo_env.backends.local import LocalCloneBackend
from halo_model.inputs import SampleRecord, build_batch
from halo_model.logprobs import base_model
from halo_reward.rules import DomainRules, RuleBook
from halo_sites.tasks import get_task
from halo_trainer.learner.learner import Learner, LearnerBatch

BUTTON_SIZES = {"large": (260, 110), "medium": (180, 76)}  # px, the Playground's style.css
VIEWPORT = Viewport()
HIT = 5.0  # a first-click reward above this includes the success bonus: the target was hit

Box = tuple[float, float, float, float]  # x0, y0, x1, y1: page pixels


def click_task(name: str, one_button: bool = False) -> Task:
    """The Playground click task ``name``; a clear exit for any other name (or, with ``one_button``,
    for a task with several buttons)."""
    try:
        task = get_task(name)
    except KeyError:
        raise SystemExit(f"unknown task {name!r}: give a Playground click task such as local.playground-2") from None
    buttons = task.config.get("buttons") or []
    if task.config.get("family") != "click" or not buttons or (one_button and len(buttons) != 1):
        raise SystemExit(f"{name} is not a {'one-button ' if one_button else ''}Playground click task")
    return task


@functools.cache
def playground_rules() -> DomainRules:
    """The reward service's own rules for the Playground (configs/rewards: default.yaml's shaping
    weights, playground.yaml's weight for each progress flag the page records)."""
    return RuleBook.load(RewardSettings().rules_dir).for_domain("playground")


def target_label(config: dict) -> str:
    """The button the task asks for: the app's rule (``config.target``, else the first button)."""
    return config.get("target") or config["buttons"][0]


def button_at(boxes: dict[str, Box], x: float, y: float) -> str | None:
    """The label of the button under the pixel (x, y), or None for a click beside every button.
    A box holds its left and top edges, not its right and bottom ones, as Chromium hit-tests it."""
    return next((label for label, (x0, y0, x1, y1) in boxes.items() if x0 <= x < x1 and y0 <= y < y1), None)


def layout_reward(config: dict, boxes: dict[str, Box]):
    """The reward service's step reward for a first click on a page whose buttons are ``boxes``.

    The first click ends the episode whatever it hits (the page locks: a new state, novelty). A
    click on any button submits, which records the ``submitted`` flag where the task lists it (a
    wrong button too); a click beside every button submits nothing. Each near-target ring the
    click lands in (``near_target`` tasks only, rings round the target's centre) is a flag as
    well; the target itself is the task's success."""
    target = target_label(config)
    x0, y0, x1, y1 = boxes[target]
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    milestones = config.get("milestones", [])
    near = config.get("near_radius", 250)  # the app's default ring
    radii = [float(r) for r in (near if isinstance(near, list) else [near])] if "near_target" in milestones else []
    rules = playground_rules()
    w = rules.shaping
    ring = rules.weight("near_target")  # every ring's flag pays the domain's progress weight
    submitted = rules.weight("submitted") if "submitted" in milestones else 0.0

    def reward(c: Candidate) -> float:
        a = c.action
        if a is None:
            return w.invalid
        if a.action not in LEFT_CLICKS or a.coordinate is None:
            return w.valid
        x, y = to_pixels(a.coordinate, VIEWPORT)  # the pixel the env clicks
        rings = sum(math.hypot(x - cx, y - cy) <= r for r in radii)
        on = button_at(boxes, x, y)
        return (
            w.valid
            + w.novelty
            + ring * rings
            + (submitted if on is not None else 0.0)
            + (w.success if on == target else 0.0)
        )

    return reward


def make_reward(config: dict, layout: int):
    """The step reward for a first click on a one-button task's ``layout`` (its button at slot
    ``layout``, sized as style.css sizes it), without a page."""
    (cx, cy) = config["slots"][layout % len(config["slots"])]
    width, height = BUTTON_SIZES[config.get("size", "large")]
    box = (cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2)
    return layout_reward(config, {target_label(config): box})


async def screenshots(task: Task, layouts: int) -> list[bytes]:
    """One screenshot per layout (seed 0..layouts-1), reset as the env service does: real Chromium."""
    env = EnvSettings()
    backend = LocalCloneBackend(env.sites_url)
    shots = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=env.chromium_path or None, args=list(env.chromium_args))
        for seed in range(layouts):
            page = await browser.new_page(viewport={"width": VIEWPORT.width, "height": VIEWPORT.height})
            await backend.setup(page, task, "probe", seed)
            shots.append(await page.screenshot(type="png", caret="hide"))
            await page.close()
        await browser.close()
    return shots


def masked_logits(learner: Learner, batch: LearnerBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """The learner's per-token log-probs [B, C] of the batch's completions, and the logits at those
    positions [B, C, V] with what the grammar forbids at -inf (captured from ``lm_head``)."""
    captured: list[torch.Tensor] = []
    hook = base_model(learner.model).lm_head.register_forward_hook(lambda _m, _i, out: captured.append(out.detach()))
    try:
        logp = learner.logprobs(batch)
    finally:
        hook.remove()
    allowed = batch.allowed[..., : captured[0].shape[-1]].to(captured[0].device)
    return logp, captured[0].float().masked_fill(~allowed, float("-inf"))


def image_sensitivity(
    learner: Learner, processor, shots: list[bytes], goal: str, completion, allowed, describe_tools: bool = True
) -> float:
    """How much the screenshot moves the policy: the largest total-variation distance between the
    layouts' next-token distributions (under the grammar), averaged over the completion's decisions.

    The same completion is scored after every layout's screenshot; positions the grammar forces
    (one allowed token) are skipped. 0 means the policy cannot tell the layouts apart at all;
    a policy that reads the target's position needs distances near 1 at the coordinate digits.
    """
    if len(shots) < 2:
        return float("nan")
    records = [SampleRecord(goal, [], [png], completion, None) for png in shots]
    inputs = build_batch(processor, records, describe_tools=describe_tools)
    mask = allowed.expand(len(shots), -1, -1)
    _, logits = masked_logits(learner, LearnerBatch(inputs=inputs, advantages=torch.zeros(len(shots)), allowed=mask))
    probs = torch.softmax(logits, dim=-1)  # [layouts, C, V]
    decisions = mask[0].sum(-1) > 1  # [C]
    tv = torch.stack(
        [0.5 * (probs[i] - probs[j]).abs().sum(-1) for i in range(len(shots)) for j in range(i + 1, len(shots))]
    )  # [pairs, C]
    return float(tv.max(0).values[decisions[: tv.shape[1]]].mean())


def fixed_completion(processor, coordinate: tuple[int, int] = (500, 500)) -> list[int]:
    """The tokens of a left_click at ``coordinate`` (the screen's centre by default), closed as the
    model closes an answer."""
    text = format_tool_call(Action(action="left_click", coordinate=coordinate))
    tok = processor.tokenizer
    return tok.encode(text, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|im_end|>")]
