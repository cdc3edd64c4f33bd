"""bfloat16 log-prob parity with and without the grammar: vLLM's CPU build against the learner.

The recorded bfloat16 figures (docs/policy.md, tests/policy/test_parity_temperature.py) were
measured under the regex grammar, where many tokens are forced (log-prob 0 at any dtype), which
lowers the mean. The gpu target samples without a grammar (configs/rl_config.yaml:
``structured_outputs: off``, ``max_tokens: 256``, temperature 0.7, no top-k/top-p). This measures
both on one bfloat16 server, with the same screenshot, goal and history as the test:

* ``regex``: the test's setting (48 tokens, the grammar replayed by the learner),
* ``free_form``: the gpu target's sampling settings (256 tokens, no grammar),

each scored by a bfloat16 learner at the sampling temperature, by a float32 learner (a bf16 server
beside a float32 learner), and at temperature 1 (the wrong temperature, the alarm's other case).
Per token: |learner - vLLM| in nats; ``mean`` is what the trainer logs as
``train/behaviour_logprob_gap`` and compares with ``behaviour_gap_alarm``.

    .venv/bin/python bench/bench_parity_bf16.py [--requests 3] [--out bench/results/parity_bf16.json]

The tiny model has random weights, so its distributions are far flatter than the 8B's: the figures
bound the rounding of the two stacks on these kernels, not the 8B's gap on a card.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from halo.policy_client import PolicyClient  # noqa: E402
from halo.policy_results import SampleResult  # noqa: E402
from halo.prompts import tool_call_regex  # noqa: E402
from halo.schemas.knobs import knob  # noqa: E402
from halo.settings.policy import PolicySettings  # noqa: E402

TEMPERATURE = 0.7  # the gpu target's (configs/rl_config.yaml)
MAX_PIXELS = 64_000  # the bfloat16 server of tests/policy/test_parity_temperature.py
GOAL = "Reply to Bob that Friday works"
HISTORY = ["left_click(coordinate=[300, 180])", "type(text='Friday works')"]
VARIANTS = {"regex": ("regex", 48), "free_form": ("off", 256)}  # (structured_outputs, max_tokens)
ALARM = knob("behaviour_gap_alarm").default  # nats per token


async def sample(settings: PolicySettings, png: bytes, mode: str, max_tokens: int, seed: int) -> SampleResult:
    async with PolicyClient.from_settings(settings, structured_outputs=mode, max_tokens=max_tokens) as client:
        return await client.sample_actions(png, GOAL, HISTORY, n=8, seed=seed, temperature=TEMPERATURE)


def gaps(model: Any, processor: Any, results: list[SampleResult], png: bytes, temperature: float, grammar: bool):
    import torch

    from halo_model.grammar import grammar_masks
    from halo_model.inputs import SampleRecord, build_batch
    from halo_model.logprobs import completion_logprobs

    parts = []
    for result in results:
        completions = [c.token_ids for c in scorable(model, result)]
        records = [SampleRecord(GOAL, HISTORY, [png], ids, result.prompt_token_ids) for ids in completions]
        batch = build_batch(processor, records)  # raises PromptMismatch unless the prompt is vLLM's
        allowed = None
        if grammar:
            vocab = model.config.text_config.vocab_size
            allowed = grammar_masks(processor.tokenizer, tool_call_regex(), completions, vocab)
        ours = completion_logprobs(model, batch, allowed=allowed, temperature=temperature)
        for i, c in enumerate(scorable(model, result)):
            theirs = torch.tensor(c.logprobs, dtype=torch.float64)
            parts.append((ours[i, : len(c.token_ids)].double() - theirs).abs())
    return torch.cat(parts)


def vision_ids(model: Any) -> set[int]:
    cfg = model.config
    names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
    return {getattr(cfg, n) for n in names if getattr(cfg, n, None) is not None}


def scorable(model: Any, result: SampleResult) -> list[Any]:
    """Candidates without the vision placeholder tokens: without a grammar the random-weight model
    samples them, and a forward pass then counts them as image slots with no image features and
    refuses the batch (the trainer's learner leaves such rows out of an update)."""
    vision = vision_ids(model)
    return [c for c in result.candidates if not vision.intersection(c.token_ids)]


def figures(values: Any) -> dict[str, float]:
    import torch

    return {
        "mean": float(values.mean()),
        "p99": float(torch.quantile(values, 0.99)),
        "max": float(values.max()),
        "tokens": int(values.numel()),
        "share_below_1e-6": float((values < 1e-6).double().mean()),  # forced tokens, exact in any dtype
    }


async def _measure(requests: int, png: bytes) -> dict[str, Any]:
    from halo_model.loading import load_model, load_processor
    from halo_model.tiny import build_tiny_model
    from tests.policy.conftest import start_policy_server, stop_policy_server, wait_listening

    model_dir = build_tiny_model()
    log_path = Path(tempfile.mkstemp(prefix="bench-parity-", suffix=".log")[1])
    started = time.monotonic()
    proc, port = start_policy_server(
        model_dir, log_path, HALO_POLICY_DTYPE="bfloat16", HALO_POLICY_MAX_PIXELS=str(MAX_PIXELS)
    )
    try:
        wait_listening(proc, log_path, timeout_s=1800)
        server_start_s = time.monotonic() - started
        settings = PolicySettings(port=port, model=str(model_dir), max_lora_rank=8, dtype="bfloat16")
        samples = {
            name: [await sample(settings, png, mode, budget, seed=5 + k) for k in range(requests)]
            for name, (mode, budget) in VARIANTS.items()
        }
    finally:
        stop_policy_server(proc)

    processor = load_processor(model_dir, max_pixels=MAX_PIXELS)
    learners = {"bfloat16": load_model(model_dir, dtype="bfloat16"), "float32": load_model(model_dir, dtype="float32")}
    out: dict[str, Any] = {}
    for name, results in samples.items():
        grammar = VARIANTS[name][0] == "regex"
        kept = [c for r in results for c in scorable(learners["float32"], r)]
        lengths = [len(c.token_ids) for c in kept]
        out[name] = {
            "structured_outputs": VARIANTS[name][0],
            "max_tokens": VARIANTS[name][1],
            "completions": len(lengths),
            "dropped_with_vision_tokens": sum(len(r.candidates) for r in results) - len(kept),
            "mean_completion_tokens": sum(lengths) / len(lengths),
            "bf16_learner_T0.7": figures(gaps(learners["bfloat16"], processor, results, png, TEMPERATURE, grammar)),
            "bf16_learner_T1": figures(gaps(learners["bfloat16"], processor, results, png, 1.0, grammar)),
            "f32_learner_T0.7": figures(gaps(learners["float32"], processor, results, png, TEMPERATURE, grammar)),
        }
    return {"server_start_s": round(server_start_s, 1), "model": model_dir.name, "variants": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3, help="n=8 requests per variant (seeds 5, 6, ...)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "parity_bf16.json")
    args = parser.parse_args()
    import torch

    from tests.policy.conftest import screenshot_png

    png = screenshot_png.__wrapped__()  # the test's Chromium screenshot (the fixture's own function)
    measured = asyncio.run(_measure(args.requests, png))
    result = {
        "machine": {"platform": platform.platform(), "torch_threads": torch.get_num_threads()},
        "vllm": "vLLM 0.32 CPU build, --dtype bfloat16, HALO_POLICY_MAX_PIXELS=64000",
        "temperature": TEMPERATURE,
        "behaviour_gap_alarm": ALARM,
        **measured,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name, v in measured["variants"].items():
        for key in ("bf16_learner_T0.7", "bf16_learner_T1", "f32_learner_T0.7"):
            f = v[key]
            print(
                f"{name:9} {key:18} mean {f['mean']:.2e}  p99 {f['p99']:.2e}  max {f['max']:.2e}  "
                f"tokens {f['tokens']}  exact {f['share_below_1e-6']:.0%}"
            )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
