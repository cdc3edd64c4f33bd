"""The learner and vLLM alone, on a Playground click task's screenshots: does GRPO learn where to click?

A diagnostic for the learning plumbing without the env and reward services (which cost ~1 s of
CPU per sampled action on a 2-core machine): the real vLLM server samples groups of actions under
the real grammar, the real learner takes a `dr_grpo` step on them with the replayed grammar masks,
the new adapter is saved and hot-loaded into vLLM under a new name, and the greedy answer on every
checked layout is read after every update. The task's layouts (one per seed) are screenshotted
once from the clone server in real Chromium, with every button's box read from the page; rewards
follow the reward service's shaping for a first click (valid 0.1, new state 0.2, 0.3 per
near-target ring reached, the submission milestone 0.3 for a click on any button, wrong ones
included, success 10 on the target), computed here from the click's pixel and the boxes instead
of the page, so an update takes ~10 s instead of a minute.

A one-button task (local.playground-1, -2) puts its button on slot seed % slots: its layouts are
seeds 0..slots-1, trained on and checked alike. A multi-button task (local.playground-4: OK,
Cancel, Yes, No dealt onto 4 slots, 24 orderings) trains on seeds 0..pool-1 and checks the greedy
answer on held-out seeds (from 1,000,000 on, the first whose target lands on each slot), so
"layouts solved" is held-out success over every target position. Group j of update k is sampled
on training layout (k * groups + j) mod L. With one layout it shows the plumbing; with several it
asks whether the policy can learn to read the target's position (or label) from the screenshot,
apart from how fast the browser can roll out episodes.

    .venv/bin/halo stack up -s sites -s policy
    .venv/bin/python scripts/learning_probe.py --task local.playground-2 --updates 100 --out var/probe/moving.jsonl

It prints (and appends to --out) one JSON line per update: the greedy action per layout, how many
layouts it solves, the sampled hit rate, and `image_tv`, how far the screenshot moves the policy's
next-token distributions (see `image_sensitivity`).

`--full-weights vision` (or any of the run setting's presets and module names) trains those
base-model modules too and pushes them into vLLM with each adapter (`PolicyClient.publish_weights`,
the run loop's sync). `--run DIR` reads a training run instead of training: `image_tv` of the base
model and of each checkpoint the run kept (adapter and full weights), on one fixed completion (a
click at the screen's centre: a greedy answer needs vLLM serving that version), no vLLM needed:

    .venv/bin/python scripts/learning_probe.py --task local.playground-2 --run var/runs/<run_id> --out var/probe/run.jsonl

`--plot OUT.png FILE.jsonl ...` draws probe outputs side by side (image_tv on a log scale, greedy
layouts solved and sampled hit rate per update), one line per file, labelled by file name.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from playwright.async_api import async_playwright

from halo.actions import format_tool_call, to_pixels
from halo.policy_client import PolicyClient
from halo.policy_results import Candidate
from halo.prompts import tool_call_regex
from halo.schemas import Action, Task, Viewport
from halo.settings import REPO_ROOT
from halo.settings.env import EnvSettings
from halo.settings.policy import PolicySettings
from halo.settings.reward import RewardSettings
from halo.settings.trainer import LearnerConfig
from halo_env.backends.local import LocalCloneBackend
from halo_model.grammar import grammar_masks
from halo_model.inputs import SampleRecord, build_batch
from halo_model.loading import load_model, load_processor
from halo_model.logprobs import base_model
from halo_model.resolution import resolve_model
from halo_reward.rules import DomainRules, RuleBook
from halo_sites.tasks import get_task
from halo_trainer.learner.checkpoint import CheckpointManager
from halo_trainer.learner.learner import Learner, LearnerBatch
from halo_trainer.learner.objective import group_advantages

BUTTON_SIZES = {"large": (260, 110), "medium": (180, 76)}  # px, the Playground's style.css
CLICKS = ("left_click", "double_click", "triple_click")
VIEWPORT = Viewport()
HELD_OUT_FROM = 1_000_000  # a multi-button task's held-out seeds start here, far from any training pool
HIT = 5.0  # a first-click reward above this includes the success bonus: the target was hit

Box = tuple[float, float, float, float]  # x0, y0, x1, y1: page pixels


@dataclass(frozen=True)
class Layout:
    """One seed's page as the policy sees it: the screenshot, and each button's box read from the page."""

    seed: int
    png: bytes
    boxes: dict[str, Box]  # button label -> box


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
        if a.action not in CLICKS or a.coordinate is None:
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


def target_slot(config: dict, layout: Layout) -> int:
    """Which of the task's slots the target button sits on (the slot nearest to its box's centre)."""
    x0, y0, x1, y1 = layout.boxes[target_label(config)]
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    return min(range(len(config["slots"])), key=lambda i: math.dist(config["slots"][i], (cx, cy)))


def held_out_seeds(slot_of_seed: list[tuple[int, int]], slots: int) -> list[int] | None:
    """The first seed (in the order given) whose target lands on each slot, slot by slot; None
    while some slot has none yet."""
    first: dict[int, int] = {}
    for seed, slot in slot_of_seed:
        first.setdefault(slot, seed)
    return [first[s] for s in range(slots)] if len(first) == slots else None


async def capture(task: Task, seeds) -> list[Layout]:
    """One layout per seed, reset as the env service does: real Chromium. The buttons' boxes come
    from the page (``data-label``), so the probe never re-implements the app's seeded shuffle."""
    env = EnvSettings()
    backend = LocalCloneBackend(env.sites_url)
    layouts = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=env.chromium_path or None, args=list(env.chromium_args))
        for seed in seeds:
            page = await browser.new_page(viewport={"width": VIEWPORT.width, "height": VIEWPORT.height})
            await backend.setup(page, task, "probe", seed)
            png = await page.screenshot(type="png", caret="hide")
            boxes = {}
            for button in await page.locator("[data-label]").all():
                b = await button.bounding_box()
                boxes[await button.get_attribute("data-label")] = (
                    b["x"],
                    b["y"],
                    b["x"] + b["width"],
                    b["y"] + b["height"],
                )
            layouts.append(Layout(seed, png, boxes))
            await page.close()
        await browser.close()
    return layouts


async def screenshots(task: Task, layouts: int) -> list[bytes]:
    """One screenshot per layout (seed 0..layouts-1), reset as the env service does: real Chromium."""
    return [layout.png for layout in await capture(task, range(layouts))]


async def held_out_layouts(task: Task) -> list[Layout]:
    """A multi-button task's checked layouts: from seed HELD_OUT_FROM on, the first seed whose
    target lands on each slot (slot order), so the greedy check covers every target position once."""
    seen: dict[int, Layout] = {}
    for start in range(HELD_OUT_FROM, HELD_OUT_FROM + 1600, 16):
        seen |= {layout.seed: layout for layout in await capture(task, range(start, start + 16))}
        slots = [(seed, target_slot(task.config, layout)) for seed, layout in seen.items()]
        chosen = held_out_seeds(slots, len(task.config["slots"]))
        if chosen is not None:
            return [seen[seed] for seed in chosen]
    raise SystemExit(f"{task.id}: no seed from {HELD_OUT_FROM} on puts the target on some slot")


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


def image_sensitivity(learner: Learner, processor, shots: list[bytes], goal: str, completion, allowed) -> float:
    """How much the screenshot moves the policy: the largest total-variation distance between the
    layouts' next-token distributions (under the grammar), averaged over the completion's decisions.

    The same completion is scored after every layout's screenshot; positions the grammar forces
    (one allowed token) are skipped. 0 means the policy cannot tell the layouts apart at all;
    a policy that reads the target's position needs distances near 1 at the coordinate digits.
    """
    if len(shots) < 2:
        return float("nan")
    inputs = build_batch(processor, [SampleRecord(goal, [], [png], completion, None) for png in shots])
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


def run_image_tv(run_dir: Path, model: str, shots: list[bytes], goal: str, processor) -> list[dict]:
    """``image_tv`` of the base model (update 0) and of every checkpoint ``run_dir`` kept."""
    config = json.loads((run_dir / "config.json").read_text())
    config = config.get("run", config)  # the run folder's config.json nests the RunConfig under "run"
    learner_cfg = LearnerConfig(
        learning_rate=config["learning_rate"],
        lora_r=config["lora_r"],
        lora_alpha=config["lora_alpha"],
        lora_target_modules=tuple(config["lora_target_modules"]),
        full_weights=tuple(config.get("full_weights") or ()),
        max_completion_tokens=config["sampling"]["max_tokens"],
    )
    completion = fixed_completion(processor)
    lines = []
    points = [None] + CheckpointManager(run_dir / "checkpoints").complete()
    for ckpt in points:
        learner = Learner(load_model(model), learner_cfg)
        if ckpt is not None:
            learner.load_adapter(ckpt.adapter_dir)
            if learner.full_weight_names():
                learner.load_base_weights(ckpt.full_weights_dir)
        allowed = grammar_masks(processor.tokenizer, tool_call_regex(), [completion], learner.vocab_size)
        tv = image_sensitivity(learner, processor, shots, goal, completion, allowed)
        lines.append({"run": run_dir.name, "update": 0 if ckpt is None else ckpt.step, "image_tv": float(f"{tv:.4g}")})
        print(json.dumps(lines[-1]), flush=True)
    return lines


def plot(out: Path, files: list[Path]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (tv_ax, solved_ax, hit_ax) = plt.subplots(1, 3, figsize=(15, 4))
    for f in files:
        rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        xs = [r["update"] for r in rows]
        tv_ax.plot(xs, [max(r["image_tv"], 1e-6) for r in rows], label=f.stem)
        solved_ax.plot(xs, [r["greedy_layouts_solved"] / r["layouts"] for r in rows], label=f.stem)
        (line,) = hit_ax.plot(xs, [r["sampled_hit_rate"] for r in rows], label=f"{f.stem}: target")
        if all("sampled_button_rate" in r for r in rows):  # multi-button tasks: any button, dashed
            hit_ax.plot(
                xs, [r["sampled_button_rate"] for r in rows], ls="--", c=line.get_color(), label=f"{f.stem}: any button"
            )
    tv_ax.set(yscale="log", xlabel="update", ylabel="image_tv", title="how much the screenshot moves the policy")
    solved_ax.set(
        xlabel="update", ylabel="share of layouts solved", title="greedy answer, checked layouts", ylim=(-0.05, 1.05)
    )
    solved_ax.axhline(0.25, ls="--", c="grey", lw=1, label="chance (one slot of 4)")
    hit_ax.set(xlabel="update", ylabel="share of samples", title="sampled actions on the target (and on any button)")
    for ax in (tv_ax, solved_ax, hit_ax):
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policy-url", default=None, help="vLLM base URL (default: the policy settings')")
    p.add_argument("--model", default=None, help="model directory (default: the tiny model vLLM serves)")
    p.add_argument("--updates", type=int, default=25)
    p.add_argument("--lr", type=float, default=2e-2)
    p.add_argument("--num-generations", type=int, default=8, help="group size N")
    p.add_argument("--groups", type=int, default=4, help="groups per update (jobs_per_update)")
    p.add_argument("--lora-r", type=int, default=8)
    p.add_argument("--lora-alpha", type=float, default=16)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--no-mask", action="store_true", help="do not replay the grammar (the old behaviour)")
    p.add_argument("--task", default="local.playground-1", help="a Playground click task")
    p.add_argument(
        "--pool", type=int, default=96, help="a multi-button task's training seeds (0..pool-1; one-button: its slots)"
    )
    p.add_argument("--adapters", default=str(REPO_ROOT / "var/probe"), help="where adapters are written")
    p.add_argument("--out", default=None, help="also append the JSON lines to this file")
    p.add_argument(
        "--full-weights",
        default="",
        help="base-model modules trained in full too, comma-separated (a run's full_weights: vision, ...)",
    )
    p.add_argument("--full-weights-lr", type=float, default=1e-3)
    p.add_argument("--run", default=None, help="a run folder: image_tv of its checkpoints instead of training")
    p.add_argument(
        "--plot", nargs="+", metavar="OUT.png FILE.jsonl", help="plot probe outputs (the first name: the PNG) and exit"
    )
    args = p.parse_args()
    if args.plot:
        return plot(Path(args.plot[0]), [Path(f) for f in args.plot[1:]])

    settings = PolicySettings(**({"url": args.policy_url} if args.policy_url else {}))
    model = args.model or resolve_model(settings.model, settings.target, tiny_seed=settings.tiny_seed)
    task = click_task(args.task)
    if args.pool < 1:
        raise SystemExit("--pool must be at least 1")
    if len(task.config["buttons"]) == 1:  # seed k puts the button on slot k: train and check every layout
        train = checked = await capture(task, range(len(task.config["slots"])))
    else:  # the buttons' orderings outnumber the slots: train on a pool, check on unseen seeds
        train, checked = await capture(task, range(args.pool)), await held_out_layouts(task)
    rewards_of = {layout.seed: layout_reward(task.config, layout.boxes) for layout in [*train, *checked]}
    shots = [layout.png for layout in checked]
    goal = task.goal
    processor = load_processor(model)
    if args.run:
        lines = run_image_tv(Path(args.run), model, shots, goal, processor)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            with Path(args.out).open("a") as fh:
                fh.writelines(json.dumps({"task": args.task, **line}) + "\n" for line in lines)
        return
    max_tokens = 128
    full = tuple(n.strip() for n in args.full_weights.split(",") if n.strip())
    learner = Learner(
        load_model(model),
        LearnerConfig(
            learning_rate=args.lr,
            lora_r=args.lora_r,
            lora_alpha=args.lora_alpha,
            max_completion_tokens=max_tokens,
            full_weights=full,
            full_weights_lr=args.full_weights_lr,
        ),
    )
    name, started = None, time.time()
    prefix = f"probe{int(started) % 100_000}"
    out = Path(args.out) if args.out else None
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
    async with PolicyClient.from_settings(settings, structured_outputs="regex", max_tokens=max_tokens) as client:
        for k in range(args.updates + 1):
            greedy = [(await client.sample_single(png, goal, [], model=name))[0] for png in shots]
            solved = [rewards_of[layout.seed](g) > HIT for layout, g in zip(checked, greedy, strict=True)]
            first = greedy[0].token_ids
            sensitivity = image_sensitivity(
                learner,
                processor,
                shots,
                goal,
                first,
                grammar_masks(processor.tokenizer, tool_call_regex(), [first], learner.vocab_size),
            )
            groups = [train[(k * args.groups + j) % len(train)] for j in range(args.groups)]
            results = [
                await client.sample_actions(
                    layout.png,
                    goal,
                    [],
                    n=args.num_generations,
                    temperature=args.temperature,
                    seed=k * 100_000 + j * 1000,
                    model=name,
                )
                for j, layout in enumerate(groups)
            ]
            rewards = [
                [rewards_of[layout.seed](c) for c in r.candidates] for layout, r in zip(groups, results, strict=True)
            ]
            flat = [x for group in rewards for x in group]
            on_buttons = [
                c.action is not None
                and c.action.action in CLICKS
                and c.action.coordinate is not None
                and button_at(layout.boxes, *to_pixels(c.action.coordinate, VIEWPORT)) is not None
                for layout, r in zip(groups, results, strict=True)
                for c in r.candidates
            ]
            # Where the update's learning signal comes from: a group whose rewards are all equal has
            # zero advantage (no gradient); only groups that mix hits and misses carry the hit signal.
            advantages = [group_advantages(torch.tensor(g)) for g in rewards]
            hits = [sum(x > HIT for x in g) for g in rewards]
            mass = [float(a.abs().sum()) for a in advantages]
            mixed = sum(m for m, h in zip(mass, hits, strict=True) if 0 < h < len(rewards[0]))
            line = {
                "update": k,
                "seconds": round(time.time() - started, 1),
                "greedy": [g.action.short() if g.action else g.text[:60] for g in greedy],
                "greedy_layouts_solved": sum(solved),
                "layouts": len(checked),
                "checked_seeds": [layout.seed for layout in checked],
                "solved_seeds": [layout.seed for layout, ok in zip(checked, solved, strict=True) if ok],
                "train_seeds": [layout.seed for layout in groups],
                "sampled_hit_rate": sum(x > HIT for x in flat) / len(flat),
                "sampled_button_rate": sum(on_buttons) / len(on_buttons),  # any button: a wrong one submits too
                "mean_reward": round(sum(flat) / len(flat), 3),
                "group_hits": hits,
                "groups_without_signal": sum(m == 0 for m in mass),
                "hit_signal_share": round(mixed / sum(mass), 4) if sum(mass) else 0.0,  # |advantage| in mixed groups
                "image_tv": float(f"{sensitivity:.4g}"),  # 4 significant digits: it falls by decades
            }
            print(json.dumps(line), flush=True)
            if out:
                with out.open("a") as fh:
                    fh.write(json.dumps({"task": args.task, "lr": args.lr, "full_weights": list(full), **line}) + "\n")
            if k == args.updates:
                break
            candidates = [c for r in results for c in r.candidates]
            records = [
                SampleRecord(goal, [], [layout.png], c.token_ids, r.prompt_token_ids)
                for layout, r in zip(groups, results, strict=True)
                for c in r.candidates
            ]
            behaviour = torch.zeros(len(candidates), max(len(c.token_ids) for c in candidates))
            for i, c in enumerate(candidates):
                behaviour[i, : len(c.logprobs)] = torch.tensor(c.logprobs)
            allowed = None
            if not args.no_mask:
                allowed = grammar_masks(
                    processor.tokenizer, tool_call_regex(), [c.token_ids for c in candidates], learner.vocab_size
                )
            learner.update(
                LearnerBatch(
                    inputs=build_batch(processor, records),
                    advantages=torch.cat(advantages),
                    behaviour_logprobs=None if args.no_mask else behaviour,  # unmasked: ratio 1
                    allowed=allowed,
                )
            )
            path = Path(args.adapters) / prefix / f"v{k + 1}"
            learner.save_adapter(path)
            previous, name = name, f"{prefix}-v{k + 1}"
            if full:  # the run loop's sync: weights and adapter as one version (older adapters unloaded)
                weights = learner.save_base_weights(path / "weights")
                await client.publish_weights(name, str(path.resolve()), str(weights.resolve()))
                continue
            await client.publish_adapter(name, str(path.resolve()))
            if previous is not None:
                await client.unload_adapter(previous)
        if full:  # leave the server with the weights it started with
            await client.reload_weights(str(Path(model).resolve()))


if __name__ == "__main__":
    asyncio.run(main())
