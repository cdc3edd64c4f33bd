"""The learner and vLLM alone, on one fixed screenshot: does GRPO concentrate the clicks on a target?

A diagnostic for the learning plumbing without the browser, env and reward services (which cost
~1 s of CPU per sampled action on a 2-core machine): the real vLLM server samples groups of
actions under the real grammar, the real learner takes a `dr_grpo` step on them with the replayed
grammar masks, the new adapter is saved and hot-loaded into vLLM under a new name, and the greedy
answer is checked after every update. Rewards follow local.playground-1's shaping (valid 0.1,
novelty 0.2 and 0.3 per near-target ring reached, success 10 plus the submission milestone 0.3),
computed here from the click's geometry instead of the page, so a run takes ~5 s per update.

Use it to choose learner hyper-parameters or to check a model change before a full run:

    .venv/bin/halo stack up -s policy           # or any vLLM serving the tiny model
    .venv/bin/python scripts/learning_probe.py --updates 25

It prints one JSON line per update: the greedy action, whether it hits, and the sampled hit rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from pathlib import Path

import torch

from halo.policy_client import Candidate, PolicyClient
from halo.prompts import tool_call_regex
from halo.schemas import Viewport
from halo.settings import REPO_ROOT
from halo.settings.policy import PolicySettings
from halo.settings.trainer import LearnerConfig
from halo_policy.logprobs import SampleRecord, build_batch, grammar_masks, load_processor
from halo_policy.server import resolve_model
from halo_trainer.batching import STOP_TOKENS
from halo_trainer.learner import Learner, LearnerBatch
from halo_trainer.objective import group_advantages

TASK = REPO_ROOT / "services/sites/halo_sites/sites/playground/tasks/playground-1.json"
SCREENSHOT = REPO_ROOT / "docs/img/sites/playground-click-fixed.png"  # local.playground-1, seed 0
BUTTON = (260, 110)  # the `large` Playground button, px (style.css)
CLICKS = ("left_click", "double_click", "triple_click")
VIEWPORT = Viewport()


def make_reward(task: dict):
    """local.playground-1's step reward for a sampled action, from the click's geometry."""
    cfg = task["config"]
    (cx, cy) = cfg["slots"][0]
    radii = [float(r) for r in ([cfg["near_radius"]] if isinstance(cfg["near_radius"], int) else cfg["near_radius"])]

    def reward(c: Candidate) -> float:
        a = c.action
        if a is None:
            return -0.5
        if a.action not in CLICKS or a.coordinate is None:
            return 0.1
        x, y = a.coordinate[0] * VIEWPORT.width / 1000, a.coordinate[1] * VIEWPORT.height / 1000
        rings = sum(math.hypot(x - cx, y - cy) <= r for r in radii)
        hit = abs(x - cx) <= BUTTON[0] / 2 and abs(y - cy) <= BUTTON[1] / 2
        return 0.1 + (0.2 if rings or hit else 0.0) + 0.3 * rings + (10.3 if hit else 0.0)

    return reward


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
    p.add_argument("--out", default=str(REPO_ROOT / "var/probe"), help="where adapters are written")
    args = p.parse_args()

    settings = PolicySettings(**({"url": args.policy_url} if args.policy_url else {}))
    model = args.model or resolve_model(settings)
    reward = make_reward(json.loads(TASK.read_text()))
    goal = json.loads(TASK.read_text())["goal"]
    png = SCREENSHOT.read_bytes()
    processor = load_processor(model)
    max_tokens = 128
    learner = Learner.from_pretrained(
        model,
        LearnerConfig(
            learning_rate=args.lr, lora_r=args.lora_r, lora_alpha=args.lora_alpha, max_completion_tokens=max_tokens
        ),
    )
    stops = [processor.tokenizer.convert_tokens_to_ids(t) for t in STOP_TOKENS]
    name, started = None, time.time()
    prefix = f"probe{int(started) % 100_000}"
    async with PolicyClient.from_settings(settings, structured_outputs="regex", max_tokens=max_tokens) as client:
        for k in range(args.updates + 1):
            greedy, _ = await client.sample_single(png, goal, [], model=name)
            results = [
                await client.sample_actions(
                    png,
                    goal,
                    [],
                    n=args.num_generations,
                    temperature=args.temperature,
                    seed=k * 100_000 + j * 1000,
                    model=name,
                )  # fmt: skip
                for j in range(args.groups)
            ]
            rewards = [[reward(c) for c in r.candidates] for r in results]
            flat = [x for group in rewards for x in group]
            print(
                json.dumps(
                    {
                        "update": k,
                        "seconds": round(time.time() - started, 1),
                        "greedy": greedy.action.short() if greedy.action else greedy.text[:60],
                        "greedy_hit": reward(greedy) > 5,
                        "sampled_hit_rate": sum(x > 5 for x in flat) / len(flat),
                        "mean_reward": round(sum(flat) / len(flat), 3),
                    }
                ),
                flush=True,
            )
            if k == args.updates:
                break
            candidates = [c for r in results for c in r.candidates]
            records = [
                SampleRecord(goal, [], [png], c.token_ids, r.prompt_token_ids) for r in results for c in r.candidates
            ]
            behaviour = torch.zeros(len(candidates), max(len(c.token_ids) for c in candidates))
            for i, c in enumerate(candidates):
                behaviour[i, : len(c.logprobs)] = torch.tensor(c.logprobs)
            allowed = None
            if not args.no_mask:
                allowed = grammar_masks(
                    processor.tokenizer, tool_call_regex(), [c.token_ids for c in candidates], learner.vocab_size, stops
                )
            learner.update(
                LearnerBatch(
                    inputs=build_batch(processor, records),
                    advantages=torch.cat([group_advantages(torch.tensor(g)) for g in rewards]),
                    behaviour_logprobs=None if args.no_mask else behaviour,  # unmasked: ratio 1
                    allowed=allowed,
                )
            )
            path = Path(args.out) / prefix / f"v{k + 1}"
            learner.save_adapter(path)
            name = f"{prefix}-v{k + 1}"
            await client.publish_adapter(name, str(path.resolve()))


if __name__ == "__main__":
    asyncio.run(main())
