"""Which link fails on the moving-target task? A diagnostic, NOT a training path.

On ``local.playground-2`` the Submit button sits in one of 4 quadrants (``slots[seed % 4]``), seen
only in the screenshot, and GRPO stays at chance (0.25). This script takes the learner alone (no
vLLM, no env or reward service) and the task's 4 layouts' screenshots (real Chromium, from the
sites service: ``click_layouts.screenshots``) and measures each link of the chain (links 1 and 2
in ``vision_links.py``, 3 and 4 here):

1. ``input``: the processor's image grid (t, h, w), the image tokens, the relative L2 difference of
   ``pixel_values`` between layouts, and the merged image tokens the button covers (the tokens whose
   pixel patches differ from every other layout's: the buttons never overlap).
2. ``tower``: the untrained vision tower's output as the language model receives it, the merged
   features (``get_image_features().pooler_output``, the embeddings put at the image tokens) and
   the DeepStack features (added to the first language-model layers' hidden states at the same
   tokens): the pairwise relative difference at the tokens whose pixels differ vs the rest, and a
   label-free read-out of the quadrant (the token that deviates most from the other layouts' mean,
   mapped to the nearest slot). The same for the language model's last hidden state at the image
   tokens, the relative difference of its hidden state at the answer's first decision, and the
   attention mass that position puts on the image and button tokens per layer (``answer_attention``).
3. ``train``: given a perfect gradient, can the model learn to answer? Teacher-forced
   cross-entropy toward each layout's correct answer (a left_click at the button's centre in the
   0-1000 space, closed with ``<|im_end|>``), all 4 layouts per step, under the grammar masks the
   learner replays. The step is ``Learner.update`` itself (its optimiser, param groups, clipping)
   with advantage 1 on the target completion at ratio 1: the dr_grpo loss is then exactly the summed
   token cross-entropy divided by the constant 4 x max_completion_tokens. After each step: the loss
   per layout (nats), whether greedy decoding would answer the target (argmax of every completion
   token under teacher forcing == the target token), layouts solved (a blind answer solves 1 of 4;
   near the blind optimum the argmax flips between answers, so a lucky 2-4 of 4 shows up: the loss
   tells), the mean loss beside ``blind_floor_loss`` = ln(distinct targets), the lowest mean loss a
   policy that ignores the screenshot can reach (below it the image is used), and ``image_tv``
   (``click_layouts.image_sensitivity`` on the screen-centre click, before the step's update).
   Settings (``--settings``): ``lora`` (r 8, alpha 16, lr 1e-2 as in the probes), ``lora-lr1e-3``,
   ``lora-lr3e-3`` (the moving-target GRPO runs' rate), ``lora+vision`` (``full_weights=("vision",)``
   at 1e-3), ``all`` (every weight at 1e-3), ``tower-lora-lr3e-3`` (``lora_target="language+tower"``:
   the adapter on the vision tower as well, at 3e-3).
4. ``gradient``: the image-dependent part of a gradient. For target i on screenshot j, g(i, j) is
   the gradient of target i's cross-entropy; ``image_share`` = mean over i != j of
   |g(i, i) - g(i, j)| / |g(i, i)| (how much of a step toward an answer depends on which screenshot
   it was taken on), and the cosine between the 4 layouts' own gradients g(i, i).

    .venv/bin/halo stack up -s sites
    .venv/bin/python experiments/vision_diagnostic.py --out var/probe/vision_diagnostic.jsonl --steps 400 \
        --settings lora,lora-lr1e-3,lora+vision,all
    .venv/bin/python experiments/vision_diagnostic.py --plot notebook/img/learning/vision_diagnostic.png var/probe/vision_diagnostic.jsonl

The JSON lines carry a ``kind``: ``input``, ``tower``, ``gradient`` (at step 0 and at the end of
each setting) and ``step`` (one per evaluation of a setting). ``--plot OUT.png FILE.jsonl ...`` draws
the loss, the layouts solved and image_tv per step, one line per setting and file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # click_layouts and vision_links beside this file

from click_layouts import (
    HIT,
    VIEWPORT,
    click_task,
    fixed_completion,
    image_sensitivity,
    make_reward,
    masked_logits,
    screenshots,
)
from vision_links import input_and_tower, prompts

from halo.actions import from_pixels, parse_action
from halo.prompts import tool_call_regex
from halo.schemas import Action
from halo.settings.policy import PolicySettings
from halo.settings.trainer import LearnerConfig
from halo_model.grammar import grammar_masks
from halo_model.loading import load_model, load_processor
from halo_model.resolution import resolve_model
from halo_trainer.learner.learner import Learner, LearnerBatch

MAX_TOKENS = 128  # the probes' sampler max_tokens: dr_grpo's constant normaliser
SETTINGS = {  # name -> (full_weights, LoRA lr, full-weights lr, lora_target)
    "lora": ((), 1e-2, 1e-3, "language"),
    "lora-lr1e-3": ((), 1e-3, 1e-3, "language"),
    "lora-lr3e-3": ((), 3e-3, 1e-3, "language"),  # the rate of the moving-target GRPO runs
    "lora+vision": (("vision",), 1e-2, 1e-3, "language"),
    "all": (("all",), 1e-2, 1e-3, "language"),
    "tower-lora-lr3e-3": ((), 3e-3, 1e-3, "language+tower"),  # the adapter on the vision tower too
}


def target_coordinate(config: dict, layout: int) -> tuple[int, int]:
    """The button's centre on ``layout`` in the policy's 0-1000 coordinate space."""
    cx, cy = config["slots"][layout % len(config["slots"])]
    return from_pixels((cx, cy), VIEWPORT)


def gradient_report(
    learner: Learner,
    processor,
    shots: list[bytes],
    goal: str,
    completions: list[list[int]],
    describe_tools: bool = True,
) -> dict:
    """Link 4: g(i, j) = the gradient of target i's cross-entropy on screenshot j (see the docstring)."""
    n = len(shots)
    grads: dict[tuple[int, int], torch.Tensor] = {}
    for i in range(n):
        allowed = grammar_masks(processor.tokenizer, tool_call_regex(), [completions[i]], learner.vocab_size)
        for j in range(n):
            inputs = prompts(processor, [shots[j]], goal, [completions[i]], describe_tools)
            learner.optimizer.zero_grad(set_to_none=True)
            logp = learner.logprob_fn(learner.model, inputs, grad=True, allowed=allowed)
            (-logp.sum()).backward()
            grads[i, j] = torch.cat(
                [(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in learner.params]
            )
    learner.optimizer.zero_grad(set_to_none=True)
    share = [
        float((grads[i, i] - grads[i, j]).norm() / grads[i, i].norm()) for i in range(n) for j in range(n) if j != i
    ]
    cos = [
        float(torch.nn.functional.cosine_similarity(grads[i, i], grads[j, j], dim=0))
        for i in range(n)
        for j in range(i + 1, n)
    ]
    return {
        "image_share": round(sum(share) / len(share), 5),
        "image_share_min_max": [round(min(share), 5), round(max(share), 5)],
        "own_gradient_cosine_mean": round(sum(cos) / len(cos), 4),
        "grad_norm_mean": round(sum(float(grads[i, i].norm()) for i in range(n)) / n, 4),
    }


def train_setting(
    name: str, model_dir: str, processor, shots, goal, config, steps: int, hold: int, emit, describe_tools: bool = True
) -> None:
    """Link 3 (and 4 at its start and end) for one setting of trained parameters."""
    full, lr, full_lr, target = SETTINGS[name]
    learner = Learner(
        load_model(model_dir),
        LearnerConfig(
            learning_rate=lr,
            lora_target=target,
            lora_r=8,
            lora_alpha=16,
            max_tokens=MAX_TOKENS,
            full_weights=full,
            full_weights_lr=full_lr,
        ),
    )
    n = len(shots)
    targets = [target_coordinate(config, k) for k in range(n)]
    completions = [fixed_completion(processor, t) for t in targets]
    reward_of = [make_reward(config, k) for k in range(n)]
    allowed = grammar_masks(processor.tokenizer, tool_call_regex(), completions, learner.vocab_size)
    inputs = prompts(processor, shots, goal, completions, describe_tools)
    batch = LearnerBatch(inputs=inputs, advantages=torch.ones(n), allowed=allowed)
    centre = fixed_completion(processor)
    centre_mask = grammar_masks(processor.tokenizer, tool_call_regex(), [centre], learner.vocab_size)
    blind = max(sum(r(_click(t)) > HIT for r in reward_of) for t in targets)  # the best single answer
    # A screenshot-blind policy gives every layout the same distribution over answers: its lowest
    # mean cross-entropy is ln(distinct targets) (uniform over them). Below it, the image is used.
    floor = math.log(len(set(targets)))
    emit(
        {
            "kind": "gradient",
            "setting": name,
            "step": 0,
            **gradient_report(learner, processor, shots, goal, completions, describe_tools),
        }
    )
    started, held = time.time(), 0
    for step in range(steps + 1):
        logp, logits = masked_logits(learner, batch)
        greedy = logits.argmax(-1)
        mask = batch.inputs.completion_mask
        ok = ((greedy == batch.inputs.completion_ids) | ~mask).all(-1).tolist()
        held = held + 1 if all(ok) else 0
        # image_tv before this step's update
        tv = image_sensitivity(learner, processor, shots, goal, centre, centre_mask, describe_tools)
        metrics = {} if step == steps or held >= hold else learner.update(batch)
        emit(
            {
                "kind": "step",
                "setting": name,
                "full_weights": list(full),
                "step": step,
                "seconds": round(time.time() - started, 1),
                "loss_per_layout": [round(-float(x), 4) for x in logp.sum(-1)],
                "greedy_is_target": ok,
                "layouts_solved": sum(ok),
                "blind_best": blind,
                "mean_loss": round(-float(logp.sum(-1).mean()), 4),
                "blind_floor_loss": round(floor, 4),
                "layouts": n,
                "image_tv": round(tv, 5),
                "greedy_answers": [_answer(processor, g[m]) for g, m in zip(greedy, mask, strict=True)],
                "grad_norm": round(metrics["train/grad_norm"], 4) if metrics else None,
            }
        )
        if not metrics:
            break
    emit(
        {
            "kind": "gradient",
            "setting": name,
            "step": step,
            **gradient_report(learner, processor, shots, goal, completions, describe_tools),
        }
    )
    trained = input_and_tower(learner, processor, shots, goal, config, describe_tools)
    for line in trained[1:]:  # link 2 on the trained model
        emit({**line, "setting": name, "step": step})


def _answer(processor, tokens: torch.Tensor) -> str:
    """The teacher-forced greedy tokens as an answer: the action if they parse, else the text."""
    text = processor.tokenizer.decode(tokens.tolist())
    action = parse_action(text)
    return action.short() if isinstance(action, Action) else text[-40:]


def _click(coordinate: tuple[int, int]) -> SimpleNamespace:
    """What ``make_reward`` reads of a sampled candidate: a left_click at ``coordinate``."""
    return SimpleNamespace(action=Action(action="left_click", coordinate=coordinate))


def plot(out: Path, files: list[Path], title: str | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (loss_ax, solved_ax, tv_ax) = plt.subplots(1, 3, figsize=(15, 4))
    floors = set()
    for f in files:
        rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        for setting in dict.fromkeys(r["setting"] for r in rows if r.get("kind") == "step"):
            steps = [r for r in rows if r.get("kind") == "step" and r["setting"] == setting]
            label = setting if len(files) == 1 else f"{f.stem}: {setting}"
            xs = [r["step"] for r in steps]
            loss_ax.plot(xs, [sum(r["loss_per_layout"]) / len(r["loss_per_layout"]) for r in steps], lw=1, label=label)
            solved_ax.plot(xs, [r["layouts_solved"] for r in steps], lw=1, label=label)
            tv_ax.plot(xs, [max(r["image_tv"], 1e-6) for r in steps], lw=1, label=label)
            floors.add(steps[0].get("blind_floor_loss", round(math.log(steps[0]["layouts"]), 4)))
    for floor in floors:
        loss_ax.axhline(floor, ls="--", c="grey", lw=1, label=f"best screenshot-blind loss ({floor:.3f})")
    loss_ax.set(
        yscale="log", xlabel="supervised step", ylabel="nats", title="target answer's cross-entropy (mean layout)"
    )
    solved_ax.axhline(1, ls="--", c="grey", lw=1, label="best blind answer")
    solved_ax.set(xlabel="supervised step", ylabel="layouts", title="greedy answer == target (of 4)", ylim=(-0.2, 4.2))
    tv_ax.set(
        yscale="log", xlabel="supervised step", ylabel="image_tv", title="how much the screenshot moves the policy"
    )
    for ax in (loss_ax, solved_ax, tv_ax):
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="local.playground-2", help="a one-button Playground click task")
    p.add_argument("--model", default=None, help="model directory (default: the tiny model vLLM serves)")
    p.add_argument("--settings", default="lora,lora+vision", help=f"comma-separated, of {', '.join(SETTINGS)}")
    p.add_argument("--steps", type=int, default=150, help="supervised steps per setting (at most)")
    p.add_argument("--hold", type=int, default=10, help="stop a setting once all layouts are solved this many steps")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (a quiet share of the machine)")
    p.add_argument("--seed", type=int, default=0, help="torch seed (the LoRA A matrices' initialisation)")
    p.add_argument(
        "--describe-tools",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the run knob describe_tools: the computer_use tool described in the system turn (default) or not",
    )
    p.add_argument("--out", default=None, help="append the JSON lines to this file")
    p.add_argument(
        "--plot", nargs="+", metavar="OUT.png FILE.jsonl", help="plot outputs (the first name: the PNG) and exit"
    )
    p.add_argument("--title", default=None, help="a title over the plot (the run's conditions, e.g. the load)")
    args = p.parse_args()
    if args.plot:
        if len(args.plot) < 2:
            raise SystemExit("--plot needs OUT.png and at least one JSONL file")
        return plot(Path(args.plot[0]), [Path(f) for f in args.plot[1:]], args.title)
    unknown = [s for s in args.settings.split(",") if s not in SETTINGS]
    if unknown:
        raise SystemExit(f"unknown settings {unknown}: choose from {list(SETTINGS)}")
    task = click_task(args.task, one_button=True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    settings = PolicySettings()
    model_dir = args.model or resolve_model(settings.model, settings.target, tiny_seed=settings.tiny_seed)
    layouts = len(task.config["slots"])
    shots = asyncio.run(screenshots(task, layouts))
    processor = load_processor(model_dir)
    out = Path(args.out) if args.out else None
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)

    def emit(line: dict) -> None:
        line = {"task": args.task, "seed": args.seed, "describe_tools": args.describe_tools, **line}
        print(json.dumps(line), flush=True)
        if out:
            with out.open("a") as fh:
                fh.write(json.dumps(line) + "\n")

    untrained = Learner(load_model(model_dir), LearnerConfig(lora_r=8, lora_alpha=16, max_tokens=MAX_TOKENS))
    for line in input_and_tower(untrained, processor, shots, task.goal, task.config, args.describe_tools):
        emit({**line, "setting": "untrained", "step": 0})
    del untrained
    for name in args.settings.split(","):
        train_setting(
            name, model_dir, processor, shots, task.goal, task.config, args.steps, args.hold, emit, args.describe_tools
        )


if __name__ == "__main__":
    main()
