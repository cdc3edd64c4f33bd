"""Probe: does the learner + vLLM hot-swap concentrate the tiny model's clicks on a fixed box?

No browser, no reward service: one real Playground screenshot, reward from the click's geometry.
Diagnostic for choosing learner hyper-parameters quickly.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import torch

from halo.policy_client import PolicyClient
from halo.prompts import tool_call_regex
from halo.settings.policy import PolicySettings
from halo.settings.trainer import LearnerConfig
from halo_policy.logprobs import SampleRecord, build_batch, grammar_masks, load_processor
from halo_trainer.learner import Learner, LearnerBatch
from halo_trainer.objective import group_advantages

GOAL = "Click the Submit button."
BOX = (510, 350, 770, 460)  # Submit button, page pixels (x0, y0, x1, y1)
CENTRE = (640, 405)
RINGS = [250]


def reward(c) -> float:
    a = c.action
    if a is None:
        return -0.5
    if a.action not in ("left_click", "double_click", "triple_click") or a.coordinate is None:
        return 0.1
    x, y = a.coordinate[0] * 1280 / 1000, a.coordinate[1] * 720 / 1000
    r = 0.1
    d = ((x - CENTRE[0]) ** 2 + (y - CENTRE[1]) ** 2) ** 0.5
    rings = [rr for rr in RINGS if d <= rr]
    if rings:
        r += 0.2 + 0.3 * len(rings)
    if BOX[0] <= x <= BOX[2] and BOX[1] <= y <= BOX[3]:
        r += 10.4
    return r


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--model", required=True)
    p.add_argument("--lr", type=float, default=2e-2)
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--updates", type=int, default=20)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--r", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16)
    p.add_argument("--mask", action="store_true")
    p.add_argument("--behaviour", action="store_true")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--png", default="docs/img/sites/playground-click-fixed.png")
    p.add_argument("--out", default="var/probe")
    p.add_argument("--rings", default="250")
    args = p.parse_args()
    RINGS[:] = [float(x) for x in args.rings.split(",")]
    png = Path(args.png).read_bytes()
    processor = load_processor(args.model)
    cfg = LearnerConfig(
        learning_rate=args.lr, lora_r=args.r, lora_alpha=args.alpha, max_completion_tokens=args.max_tokens
    )
    learner = Learner.from_pretrained(args.model, cfg)
    vocab = learner.model.get_base_model().config.text_config.vocab_size
    stops = [processor.tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
    settings = PolicySettings(port=args.port, model=args.model, target="cpu")
    out = Path(args.out)
    name = None
    t0 = time.time()
    async with PolicyClient.from_settings(settings, structured_outputs="regex", max_tokens=args.max_tokens) as client:
        for k in range(args.updates + 1):
            g, _ = await client.sample_single(png, GOAL, [], model=name)
            cands = []
            for j in range(args.groups):
                res = await client.sample_actions(
                    png, GOAL, [], n=args.n, temperature=args.temperature, seed=k * 100000 + j * 1000, model=name
                )
                cands.append(res)
            rewards = [[reward(c) for c in r.candidates] for r in cands]
            hits = sum(x > 5 for rr in rewards for x in rr)
            near = sum(x > 0.5 for rr in rewards for x in rr)
            mean_r = sum(x for rr in rewards for x in rr) / (args.n * args.groups)
            print(
                json.dumps(
                    {
                        "update": k,
                        "t": round(time.time() - t0, 1),
                        "greedy": g.action.short() if g.action else g.text[:60],
                        "greedy_hit": reward(g) > 5,
                        "hits": hits,
                        "near": near,
                        "mean_r": round(mean_r, 3),
                        "samples": args.n * args.groups,
                    }
                ),
                flush=True,
            )
            if k == args.updates:
                break
            adv = torch.cat([group_advantages(torch.tensor(rr)) for rr in rewards])
            recs = [
                SampleRecord(GOAL, [], [png], c.token_ids, r.prompt_token_ids) for r in cands for c in r.candidates
            ]
            inputs = build_batch(processor, recs)
            allowed = None
            if args.mask:
                allowed = grammar_masks(
                    processor.tokenizer, tool_call_regex(), [rc.completion_token_ids for rc in recs], vocab, stops
                )
            behaviour = None
            if args.behaviour:
                behaviour = torch.zeros(inputs.completion_mask.shape)
                flat = [c for r in cands for c in r.candidates]
                for i, c in enumerate(flat):
                    behaviour[i, : len(c.logprobs)] = torch.tensor(c.logprobs)
            batch = LearnerBatch(inputs=inputs, advantages=adv, behaviour_logprobs=behaviour, allowed=allowed)
            for _ in range(args.epochs):
                m = learner.update(batch)
            print(
                "   ",
                {k2: round(v, 4) for k2, v in m.items() if k2 in ("train/entropy", "train/grad_norm", "train/ratio_max", "train/clip_frac")},
                file=sys.stderr,
            )
            path = out / f"v{k + 1}"
            learner.save_adapter(path)
            name = f"probe{int(t0) % 100000}-v{k + 1}"
            await client.publish_adapter(name, str(path.resolve()))


if __name__ == "__main__":
    asyncio.run(main())
