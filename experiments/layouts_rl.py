"""GRPO on a moving target's layouts with the learner sampling itself: a diagnostic, NOT a training path.

Every moving-target run on the stack (notebook/) costs 8-20 s an update, most of it the
rollout (vLLM and Chromium), so a session holds 200-600 updates of one setting. This script asks the
question those runs could not afford to: does the RL update, as the learner makes it, teach the tiny
model to read the button's position at all, and after how many updates? It keeps everything of an
update that decides what is learned and drops what only costs time:

* the policy is the learner's own model (``Learner``, its LoRA and ``lora_target``), sampled at the
  run's temperature under the same regex grammar vLLM applies (``halo_model.grammar``'s stop tokens),
  so the candidates are drawn from the distribution the learner scores (ratio 1, as on-policy);
* the prompt is the run's (``build_batch`` with ``describe_tools``) on the 4 layouts' real Chromium
  screenshots (``click_layouts.screenshots``: the sites service, reset as the env service does);
* the reward of a first click is the reward service's (``click_layouts.make_reward``, tested to pay
  what the service pays: valid, novelty, the near-target rings, ``submitted``, success), one-step
  episodes as ``--max-steps 1`` runs have them;
* advantages are the loop's (``objective.group_advantages``, dr_grpo), contrasted across the
  layouts by the loop's own ``seed_contrast.contrast_by_key`` (``seed_contrast``), and the step is
  ``Learner.update`` (its AdamW, clipping, KL term to the adapter-free base).

Each update samples N candidates on each of the 4 layouts (with ``--crn`` from one seed, as the
knob ``common_random_numbers`` makes vLLM do). Every ``--eval-every`` updates the greedy answer on
each layout is checked (hit = the reward includes the success bonus). The JSON lines record per
update: hits per layout, the share of pointer clicks nearest the shown layout's button (a
screen-blind policy: 25 %), the share of candidates identical across the layouts, and the greedy
answers. What it is not: the env service's page (the reward is computed from the button's box, not
clicked), vLLM's sampler (the learner's float32 sampler, not bit-identical draws) or the loop's
versioning and staleness; a setting that learns here still has to be confirmed on the stack.

    .venv/bin/halo stack up -s sites
    .venv/bin/python experiments/layouts_rl.py --updates 400 --lr 3e-3 --crn --lora-target language+tower \\
        --no-describe-tools --out var/probe/layouts_rl.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))  # click_layouts: the screenshots and reward

from click_layouts import HIT, VIEWPORT, click_task, make_reward, screenshots

from halo.actions import LEFT_CLICKS, to_pixels
from halo.policy_results import Candidate
from halo.prompts import tool_call_regex
from halo.settings.policy import PolicySettings
from halo.settings.trainer import LearnerConfig
from halo_model.grammar import STOP_TOKENS, grammar_masks
from halo_model.inputs import SampleRecord, build_batch, prompt_inputs
from halo_model.loading import load_model, load_processor
from halo_model.resolution import resolve_model
from halo_trainer.grpo.seed_contrast import contrast_by_key
from halo_trainer.learner.learner import Learner, LearnerBatch
from halo_trainer.learner.objective import group_advantages

MAX_TOKENS = 256  # the tiny profile's max_tokens: dr_grpo's constant normaliser


class GrammarMask(transformers.LogitsProcessor):
    """The regex grammar as vLLM's structured-output backend drives xgrammar (the stop tokens too),
    for ``generate``: one matcher per row, fed the previous step's token."""

    def __init__(self, tokenizer, vocab_size: int, rows: int) -> None:
        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        compiled = xgr.GrammarCompiler(info, max_threads=1).compile_regex(tool_call_regex())
        stops = [tokenizer.convert_tokens_to_ids(t) for t in STOP_TOKENS]
        self.xgr = xgr
        self.matchers = [xgr.GrammarMatcher(compiled, override_stop_tokens=stops) for _ in range(rows)]
        self.bitmask = xgr.allocate_token_bitmask(rows, vocab_size)
        self.started = False

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for i, m in enumerate(self.matchers):
            if self.started and not m.is_terminated() and not m.accept_token(int(input_ids[i, -1])):
                raise RuntimeError(f"row {i}: token {int(input_ids[i, -1])} left the grammar")
            if not m.is_terminated():
                m.fill_next_token_bitmask(self.bitmask, i)
        self.started = True
        scores = scores.float()
        self.xgr.apply_token_bitmask_inplace(scores, self.bitmask)
        return scores


@torch.no_grad()
def sample(learner: Learner, processor, enc, n: int, temperature: float | None, stops: list[int]) -> list[list[int]]:
    """n completions (token ids up to and including the stop token, or ``MAX_TOKENS`` of them) of
    one prompt, from the learner's model with its adapter; ``temperature`` None = greedy."""
    model = learner.model
    model.eval()
    # top_k 0 and top_p 1: nothing but the temperature shapes the draw, as the run's sampling params
    # say (transformers would otherwise apply its default top_k of 50)
    shaping = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0} if temperature else {}
    out = model.generate(
        **enc,
        **shaping,
        num_return_sequences=n,
        max_new_tokens=MAX_TOKENS,
        eos_token_id=stops,
        pad_token_id=stops[0],
        logits_processor=[GrammarMask(processor.tokenizer, learner.vocab_size, n)],
    )
    model.train()
    completions = []
    for row in out[:, enc["input_ids"].shape[1] :].tolist():
        end = next((i + 1 for i, t in enumerate(row) if t in stops), len(row))
        completions.append(row[:end])
    return completions


def answer(processor, completion: list[int], index: int, stops: list[int]) -> Candidate:
    """The candidate a completion is, parsed as the policy client parses vLLM's text (no stop token)."""
    ids = completion[:-1] if completion and completion[-1] in stops else completion
    return Candidate.parse(index, processor.tokenizer.decode(ids))


def nearest_slot(c: Candidate, slots) -> int | None:
    """The layout whose button is nearest to a pointer click, None for other actions."""
    a = c.action
    if a is None or a.action not in LEFT_CLICKS or a.coordinate is None:
        return None
    x, y = to_pixels(a.coordinate, VIEWPORT)
    return min(range(len(slots)), key=lambda k: math.hypot(slots[k][0] - x, slots[k][1] - y))


def summary(files: list[Path], block: int) -> list[dict]:
    """Blocks of ``block`` updates per file: the two readings of a screen-reading policy (the
    nearest-button share of pointer clicks, the candidates identical across layouts), the hits per
    layout, and the greedy checks' layouts solved."""
    rows = []
    for f in files:
        lines = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        updates = [x for x in lines if x["kind"] == "update"]
        evals = [x for x in lines if x["kind"] == "eval"]
        setting = lines[0]["setting"] if lines and "setting" in lines[0] else {}
        for start in range(0, len(updates), block):
            part = updates[start : start + block]
            clicks = sum(u["pointer_clicks"] for u in part)
            n = setting.get("n", 8)
            checks = [sum(e["hits"]) for e in evals if start <= e["update"] < start + block]
            rows.append(
                {
                    "file": f.name,
                    "updates": f"{part[0]['update']}-{part[-1]['update']}",
                    "hits_per_layout": [sum(u["hits"][k] for u in part) for k in range(len(part[0]["hits"]))],
                    "pointer_clicks": clicks,
                    "nearest_own_share": round(sum(u["nearest_own"] for u in part) / clicks, 3) if clicks else None,
                    "identical_share": round(sum(u["identical"] for u in part) / (n * len(part)), 3),
                    "entropy": round(sum(u["entropy"] for u in part) / len(part), 3),
                    "greedy_solved": checks,
                    "seconds_per_update": round((part[-1]["seconds"] - part[0]["seconds"]) / max(len(part) - 1, 1), 2),
                }
            )
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", default="local.playground-2")
    p.add_argument("--model", default=None, help="model folder (default: the tiny model vLLM serves)")
    p.add_argument("--updates", type=int, default=400)
    p.add_argument("--n", type=int, default=8, help="candidates per layout (num_generations)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--kl-coef", type=float, default=0.0)
    p.add_argument("--seed-contrast", type=float, default=0.0)
    p.add_argument("--crn", action="store_true", help="the layouts of one update sample from one seed")
    p.add_argument("--lora-target", default="language", choices=["language", "language+merger", "language+tower"])
    p.add_argument("--no-describe-tools", action="store_true")
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--minutes", type=float, default=None, help="stop after this wall time, with a last greedy check")
    p.add_argument("--seed", type=int, default=0, help="torch seed: the adapter's initialisation and the draws")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="append the JSON lines to this file")
    p.add_argument("--summary", nargs="+", type=Path, default=None, help="summarise these JSON-lines files and exit")
    p.add_argument("--block", type=int, default=40, help="updates per block of --summary")
    args = p.parse_args()
    if args.summary:
        for row in summary(args.summary, args.block):
            print(json.dumps(row))
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    describe = not args.no_describe_tools

    task = click_task(args.task, one_button=True)
    config = task.config
    slots = config["slots"]
    shots = asyncio.run(screenshots(task, len(slots)))
    settings = PolicySettings()
    model_dir = args.model or resolve_model(settings.model, settings.target, tiny_seed=settings.tiny_seed)
    processor = load_processor(model_dir)
    learner = Learner(
        load_model(model_dir),
        LearnerConfig(
            learning_rate=args.lr,
            lora_target=args.lora_target,
            lora_r=8,
            lora_alpha=16,
            max_tokens=MAX_TOKENS,
            kl_coef=args.kl_coef,
            temperature=args.temperature,
        ),
    )
    stops = [processor.tokenizer.convert_tokens_to_ids(t) for t in STOP_TOKENS]
    encs = [prompt_inputs(processor, task.goal, [], [png], describe_tools=describe) for png in shots]
    rewards = [make_reward(config, k) for k in range(len(slots))]
    out = open(args.out, "a") if args.out else None  # noqa: SIM115 (appended through the run)

    def emit(line: dict) -> None:
        text = json.dumps({**line, "setting": vars(args) | {"out": None}})
        print(json.dumps(line), flush=True)
        if out:
            out.write(text + "\n")
            out.flush()

    def evaluate(update: int) -> None:
        answers = [answer(processor, sample(learner, processor, e, 1, None, stops)[0], 0, stops) for e in encs]
        hits = [rewards[k](c) > HIT for k, c in enumerate(answers)]
        emit(
            {
                "kind": "eval",
                "update": update,
                "hits": hits,
                "greedy": [c.action.short() if c.action else c.text[-30:] for c in answers],
            }
        )

    started = time.time()
    for update in range(args.updates + 1):
        out_of_time = args.minutes is not None and time.time() - started > 60 * args.minutes
        if update % args.eval_every == 0 or out_of_time:
            evaluate(update)
        if update == args.updates or out_of_time:
            break
        draw = args.seed * 1_000_003 + update
        groups, texts, rs = [], [], []
        for k, enc in enumerate(encs):
            torch.manual_seed(draw if args.crn else draw * 8 + k)
            comps = sample(learner, processor, enc, args.n, args.temperature, stops)
            cands = [answer(processor, c, i, stops) for i, c in enumerate(comps)]
            groups.append(comps)
            texts.append([c.text for c in cands])
            rs.append([rewards[k](c) for c in cands])
        adv = [group_advantages(torch.tensor(r)).tolist() for r in rs]
        if args.seed_contrast:  # one task, step 0, no history: an answer's text is the action's key
            adv, _ = contrast_by_key(texts, adv, args.seed_contrast)
        records = [SampleRecord(task.goal, [], [shots[k]], c) for k, comps in enumerate(groups) for c in comps]
        completions = [c for comps in groups for c in comps]
        batch = LearnerBatch(
            inputs=build_batch(processor, records, describe_tools=describe),
            advantages=torch.tensor([a for g in adv for a in g]),
            allowed=grammar_masks(processor.tokenizer, tool_call_regex(), completions, learner.vocab_size),
        )
        metrics = learner.update(batch)
        cands = [[Candidate.parse(i, t) for i, t in enumerate(g)] for g in texts]
        nearest = [[nearest_slot(c, slots) for c in g] for g in cands]
        clicks = sum(s is not None for g in nearest for s in g)
        emit(
            {
                "kind": "update",
                "update": update,
                "seconds": round(time.time() - started, 1),
                "hits": [sum(r > HIT for r in g) for g in rs],
                "pointer_clicks": clicks,
                "nearest_own": sum(s == k for k, g in enumerate(nearest) for s in g),
                "identical": sum(len({texts[k][i] for k in range(len(texts))}) == 1 for i in range(args.n)),
                "mean_reward": round(sum(map(sum, rs)) / (args.n * len(rs)), 4),
                "entropy": round(metrics.get("train/entropy", float("nan")), 4),
                "grad_norm": round(metrics.get("train/grad_norm", float("nan")), 4),
            }
        )


if __name__ == "__main__":
    main()
