"""Can the tiny random-weight Qwen3-VL be given eyes? An experiment, NOT a training path.

The RL runs on the moving target (notebook/) and their learner-alone replay
(``experiments/layouts_rl.py``) stay screen-blind: at the random-weight model, only 1-3 % of a
layout's gradient depends on the screenshot, and RL's candidates change every update, so that
part averages away. A pretrained Qwen3-VL is not like that: it was pretrained to point at what it
sees (grounding, in the same 0-1000 coordinates its clicks use). This script asks whether the tiny
model can get such a prior from generic synthetic images, never a clone's page and never a tool
call: a canvas of a random colour, a few grey bars, one coloured box at a random place, and the
question "Point to the box." answered as ``(x, y)``, the box's centre in 0-1000. Teacher-forced
cross-entropy on the answer, every weight trained (AdamW). Every ``--eval-every`` steps, greedy
answers on held-out canvases: the mean distance to the centre (0-1000 units) and the share inside
the box. ``--save DIR`` writes the trained weights as a model folder (the base folder's tokenizer,
processor and template), for ``layouts_rl.py --model DIR`` and vLLM.

    .venv/bin/python experiments/pretrain_pointing.py --steps 3000 --out var/probe/pointing.jsonl \\
        --save var/models/tiny-pointing-s0
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import time
from pathlib import Path

import torch
from PIL import Image, ImageDraw

from halo.actions import from_pixels
from halo.schemas import Viewport
from halo.settings.policy import PolicySettings
from halo_model.loading import load_model, load_processor
from halo_model.resolution import resolve_model

WIDTH, HEIGHT = 1280, 720
QUESTION = "Point to the box."
# How the answer is written: "(x, y)", or Qwen-VL's grounding output for a point (JSON with
# ``point_2d``, as the 8B was pretrained to answer), both in the 0-1000 space clicks use.
ANSWERS = {"paren": "({x}, {y})", "point_2d": '{{"point_2d": [{x}, {y}]}}'}


def canvas(rng: random.Random) -> tuple[Image.Image, tuple[int, int, int, int]]:
    """A synthetic screen: background, 0-3 grey bars, one saturated box; the box in pixels."""
    bg = tuple(rng.randint(200, 255) for _ in range(3))
    img = Image.new("RGB", (WIDTH, HEIGHT), bg)
    draw = ImageDraw.Draw(img)
    for _ in range(rng.randint(0, 3)):
        x, y = rng.randint(0, WIDTH - 300), rng.randint(0, HEIGHT - 20)
        grey = rng.randint(120, 190)
        draw.rectangle((x, y, x + rng.randint(100, 300), y + rng.randint(6, 14)), fill=(grey, grey, grey))
    w, h = rng.randint(120, 240), rng.randint(50, 100)
    x0, y0 = rng.randint(0, WIDTH - w), rng.randint(0, HEIGHT - h)
    hue = [rng.randint(0, 90), rng.randint(0, 90), rng.randint(150, 255)]
    rng.shuffle(hue)
    draw.rectangle((x0, y0, x0 + w, y0 + h), fill=tuple(hue))
    return img, (x0, y0, x0 + w, y0 + h)


def centre_1000(box: tuple[int, int, int, int]) -> tuple[int, int]:
    """The box's centre in the 0-1000 space, as the policy's clicks map pixels (``from_pixels``)."""
    x0, y0, x1, y1 = box
    return from_pixels(((x0 + x1) / 2, (y0 + y1) / 2), Viewport(width=WIDTH, height=HEIGHT))


def prompt_text(processor) -> str:
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": QUESTION}]}]
    return processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def batch(processor, rng: random.Random, size: int, answer: str = ANSWERS["paren"]):
    """Model inputs and labels (-100 but on the answer and its end token) for ``size`` canvases."""
    prompt = prompt_text(processor)
    images, texts, boxes = [], [], []
    for _ in range(size):
        img, box = canvas(rng)
        x, y = centre_1000(box)
        images.append(img)
        texts.append(prompt + answer.format(x=x, y=y) + "<|im_end|>")
        boxes.append(box)
    enc = processor(text=texts, images=images, return_tensors="pt", padding=True)
    prompt_len = len(processor(text=[prompt], images=[images[0]], return_tensors="pt")["input_ids"][0])
    labels = enc["input_ids"].clone()
    labels[:, :prompt_len] = -100
    labels[enc["attention_mask"] == 0] = -100
    return enc, labels, boxes


@torch.no_grad()
def evaluate(model, processor, rng: random.Random, n: int) -> dict:
    """Greedy answers on ``n`` held-out canvases: distance to the centre (0-1000) and hits."""
    model.eval()
    prompt = prompt_text(processor)
    dists, inside, unreadable = [], 0, 0
    stop = processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    for _ in range(n):
        img, box = canvas(rng)
        enc = processor(text=[prompt], images=[img], return_tensors="pt")
        out = model.generate(**enc, max_new_tokens=24, do_sample=False, eos_token_id=stop, pad_token_id=stop)
        text = processor.tokenizer.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        m = re.search(r"(\d+), (\d+)", text)
        if not m:
            unreadable += 1
            continue
        x, y = int(m.group(1)), int(m.group(2))
        cx, cy = centre_1000(box)
        dists.append(((x - cx) ** 2 + (y - cy) ** 2) ** 0.5)
        px, py = x / 1000 * WIDTH, y / 1000 * HEIGHT
        inside += box[0] <= px < box[2] and box[1] <= py < box[3]
    model.train()
    return {
        "mean_distance": round(sum(dists) / len(dists), 1) if dists else None,
        "inside": inside,
        "unreadable": unreadable,
        "of": n,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="base model folder (default: the tiny model vLLM serves)")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--answer", choices=list(ANSWERS), default="paren", help="how the point is written")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-n", type=int, default=64)
    p.add_argument("--minutes", type=float, default=None, help="stop after this wall time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="append the JSON lines to this file")
    p.add_argument("--save", default=None, help="write the trained model folder here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    settings = PolicySettings()
    base = args.model or resolve_model(settings.model, settings.target, tiny_seed=settings.tiny_seed)
    processor = load_processor(base)
    model = load_model(base)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    rng = random.Random(args.seed)
    out = open(args.out, "a") if args.out else None  # noqa: SIM115 (appended through the run)
    started = time.time()

    def emit(line: dict) -> None:
        print(json.dumps(line), flush=True)
        if out:
            out.write(json.dumps(line) + "\n")
            out.flush()

    for step in range(args.steps + 1):
        out_of_time = args.minutes is not None and time.time() - started > 60 * args.minutes
        if step % args.eval_every == 0 or step == args.steps or out_of_time:
            held = random.Random(10_000 + args.seed)  # the same held-out canvases each time
            last_eval = evaluate(model, processor, held, args.eval_n)
            emit({"kind": "eval", "step": step, "seconds": round(time.time() - started, 1), **last_eval})
        if step == args.steps or out_of_time:
            break
        enc, labels, _ = batch(processor, rng, args.batch, ANSWERS[args.answer])
        logits = model(**enc).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 20 == 0:
            emit(
                {
                    "kind": "step",
                    "step": step,
                    "loss": round(loss.item(), 4),
                    "seconds": round(time.time() - started, 1),
                }
            )
    if args.save:
        dest = Path(args.save)
        model.save_pretrained(dest)
        for f in Path(base).iterdir():
            # the tiny builder's marker names the random-weight build: this folder is not that one
            if f.name != "halo_tiny_model.json" and not (dest / f.name).exists():
                shutil.copy(f, dest / f.name)
        provenance = {"base": str(base), "argv": vars(args), "steps": step, "last_eval": last_eval}
        (dest / "halo_pointing.json").write_text(json.dumps(provenance, indent=2))
        emit({"kind": "saved", "dir": str(dest)})


if __name__ == "__main__":
    main()
