"""One prompt pass per group against the per-row path: a learner update on a group of 8 completions.

The batch is bench_learner's: one 1280x720 screenshot prompt (tiny Qwen3-VL, rebuilt by
halo_model.inputs.build_batch as for training) and eight distinct computer-use answers. The same
learner settings run on both log-prob paths, ``Learner(logprob_fn=completion_logprobs)`` (per row)
and the default ``grouped_logprobs`` (halo_model.grouped), and the two are measured alternately in
one process so that their ratio is not skewed by load that changes between them:

* update time: wall and CPU seconds (medians; CPU time is the steadier on a shared machine), and
  the no-grad scoring of the batch (``Learner.logprobs``: the reference pass, DPO's reference);
* memory, two ways: (a) the activations autograd saves for the backward of one update (bytes of
  the distinct tensor storages it packs, parameters left out): the part of a GPU's memory that
  grows with the batch, deterministic; (b) the peak RSS growth of one update in a fresh process
  per path (Linux's ``VmHWM`` high-water mark, reset through ``/proc/self/clear_refs`` after
  the setup, minus ``VmRSS`` before the update; a fresh process so that one path's freed memory
  is not reused by the other);
* tokens through the decoder and bytes of inputs moved to the device per update;
* the two paths' agreement on this batch: max abs difference of the log-probs, max difference of
  the LoRA gradients relative to each parameter's largest entry.

    .venv/bin/python bench/bench_grouped_prompt.py [--updates 5] [--group 8] [--threads 1]

``--dpo`` measures a DPO step instead: the group's K = 8 distinct actions at the one
state, and the preference pairs MCTS builds among them (``Tree.preference_pairs``: every two
explored children whose Q differ, the higher chosen; all K(K-1)/2 = 28 when the Q are distinct,
each action in K - 1 = 7 pairs), rows built as ``mcts.pairs.pair_batches`` builds them (one row
per pair side), the reference log-probs computed once, and one ``dpo_update`` (beta 0.1,
micro-batches of 8 pairs, the trainer's default) per path, timed alternately; plus the reference
scoring of the pairs' rows, the rows and tokens through the decoder, and the two paths' agreement
(every step's loss, and the weights after all of them, with ``adam_eps`` 1e-3 as the tests use so
that AdamW does not magnify float noise in near-zero gradients). It adds a ``dpo`` key to the
JSON file, leaving the others as they are:

    .venv/bin/python bench/bench_grouped_prompt.py --dpo [--updates 3]

Writes bench/results/grouped_prompt.json and prints a summary.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import fields
from itertools import combinations
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_learner import cpu_seconds, group_samples  # noqa: E402

from halo.settings.trainer import LearnerConfig  # noqa: E402
from halo_model.grouped import grouped_logprobs, pack  # noqa: E402
from halo_model.inputs import build_batch, select_rows  # noqa: E402
from halo_model.loading import load_model, load_processor  # noqa: E402
from halo_model.logprobs import completion_logprobs  # noqa: E402
from halo_model.tiny import build_tiny_model  # noqa: E402
from halo_trainer.learner.dpo_update import dpo_update  # noqa: E402
from halo_trainer.learner.learner import Learner  # noqa: E402
from halo_trainer.learner.learner_batch import LearnerBatch  # noqa: E402

PATHS = {"per_row": completion_logprobs, "grouped": grouped_logprobs}


def setup(group: int) -> tuple[Path, LearnerBatch, LearnerConfig]:
    model_dir = build_tiny_model()
    processor = load_processor(model_dir)
    inputs = build_batch(processor, group_samples(processor.tokenizer, group))
    rewards = torch.tensor([float(i % 3 == 0) for i in range(group)])
    batch = LearnerBatch(inputs=inputs, advantages=rewards - rewards.mean())
    max_completion = int(inputs.completion_mask.sum(-1).max())
    config = LearnerConfig(
        learning_rate=1e-4,
        lora_r=8,
        lora_alpha=16,
        micro_batch_size=group,
        max_tokens=max(64, max_completion),
    )
    return model_dir, batch, config


def learner(model_dir: Path, config: LearnerConfig, path: str) -> Learner:
    torch.manual_seed(0)
    return Learner(load_model(model_dir), config, logprob_fn=PATHS[path])


def saved_activation_bytes(learner: Learner, batch: LearnerBatch) -> int:
    """Bytes of the distinct storages autograd saves for the backward during one update."""
    params = {p.untyped_storage().data_ptr() for p in learner.model.parameters()}
    seen: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        learner.update(batch)
    return sum(seen.values())


def nbytes(obj) -> int:
    return sum(getattr(obj, f.name).nbytes for f in fields(obj) if isinstance(getattr(obj, f.name), torch.Tensor))


def agreement(model_dir: Path, config: LearnerConfig, batch: LearnerBatch) -> dict:
    """Log-probs and LoRA gradients of both paths on one learner after one step (LoRA B not 0)."""
    trained = learner(model_dir, config, "grouped")
    trained.update(batch)
    weights = batch.advantages.unsqueeze(-1) * batch.inputs.completion_mask
    out = {}
    for path, fn in PATHS.items():
        trained.model.zero_grad(set_to_none=True)
        logp = fn(trained.model, batch.inputs, grad=True)
        (weights * logp).sum().backward()
        grads = {n: p.grad.clone() for n, p in trained.model.named_parameters() if p.requires_grad}
        out[path] = (logp.detach(), grads)
    (logp_r, grads_r), (logp_g, grads_g) = out["per_row"], out["grouped"]
    relative = max(
        float((grads_g[n] - grads_r[n]).abs().max() / grads_r[n].abs().max().clamp(min=1e-30)) for n in grads_r
    )
    return {"logprob_max_abs_diff": float((logp_g - logp_r).abs().max()), "lora_grad_max_rel_diff": relative}


def memory_kib(field: str) -> int:
    """A ``/proc/self/status`` figure (VmRSS, VmHWM) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)


def child(path: str, group: int) -> None:
    """One update in this (fresh) process; prints the peak RSS growth it caused, in MiB."""
    model_dir, batch, config = setup(group)
    one = learner(model_dir, config, path)
    gc.collect()
    before = memory_kib("VmRSS")
    # The setup (model load, image processing) set a higher mark than an update would: start afresh.
    Path("/proc/self/clear_refs").write_text("5")
    one.update(batch)
    peak = memory_kib("VmHWM")
    print(json.dumps({"peak_rss_growth_mib": (peak - before) / 1024, "rss_before_mib": before / 1024}))


def peak_rss(path: str, group: int, threads: int) -> dict:
    command = [sys.executable, __file__, "--child", path, "--group", str(group), "--threads", str(threads)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def timed(fn) -> tuple[float, float]:
    start, start_cpu = time.perf_counter(), cpu_seconds()
    fn()
    return time.perf_counter() - start, cpu_seconds() - start_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=5, help="timed updates per path (after one warm-up)")
    parser.add_argument("--group", type=int, default=8, help="completions sharing the prompt")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--dpo", action="store_true", help="a DPO step on the pairs among the group's actions")
    parser.add_argument("--child", choices=list(PATHS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        child(args.child, args.group)
        return
    if args.dpo:
        dpo_main(args)
        return

    model_dir, batch, config = setup(args.group)
    inputs = batch.inputs
    packed = pack(inputs, spatial_merge_size=2)
    learners = {path: learner(model_dir, config, path) for path in PATHS}
    results: dict[str, object] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "model": model_dir.name,
        "group": args.group,
        "prompt_tokens": inputs.prompt_lengths[0],
        "image_tokens": int((inputs.mm_token_type_ids[0] == 1).sum()),
        "completion_tokens": int(inputs.completion_mask.sum()),
        "decoder_tokens": {"per_row": inputs.input_ids.numel(), "grouped": packed.input_ids.numel()},
        "input_bytes_to_device": {"per_row": nbytes(inputs), "grouped": nbytes(packed)},
    }
    results["saved_activation_mib"] = {
        path: saved_activation_bytes(one, batch) / 2**20 for path, one in learners.items()
    }  # also the warm-up update of each
    samples: dict[str, dict[str, list[float]]] = {
        f"{path}_{kind}": {"wall": [], "cpu": []} for path in PATHS for kind in ("update", "score")
    }
    for _ in range(args.updates):
        for path, one in learners.items():
            for kind, fn in (
                ("update", lambda one=one: one.update(batch)),
                ("score", lambda one=one: one.logprobs(batch)),
            ):
                wall, cpu = timed(fn)
                samples[f"{path}_{kind}"]["wall"].append(wall)
                samples[f"{path}_{kind}"]["cpu"].append(cpu)
    for key, s in samples.items():
        results[key] = {"s_median": statistics.median(s["wall"]), "cpu_s_median": statistics.median(s["cpu"])}
    for kind in ("update", "score"):
        per_row, grouped = results[f"per_row_{kind}"], results[f"grouped_{kind}"]
        results[f"{kind}_ratio_grouped_over_per_row"] = {
            "wall": grouped["s_median"] / per_row["s_median"],
            "cpu": grouped["cpu_s_median"] / per_row["cpu_s_median"],
        }
    results["peak_rss"] = {path: peak_rss(path, args.group, args.threads) for path in PATHS}
    results["agreement"] = agreement(model_dir, config, batch)
    results["load_average"] = os.getloadavg()

    out = ROOT / "bench" / "results" / "grouped_prompt.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    report(results, out)


def report(results: dict, out: Path) -> None:
    print(
        f"tiny Qwen3-VL, a group of {results['group']} on one prompt of {results['prompt_tokens']} tokens "
        f"({results['image_tokens']} image), {results['completion_tokens']} completion tokens"
    )
    for kind, label in (("update", "update"), ("score", "no-grad scoring")):
        r, g = results[f"per_row_{kind}"], results[f"grouped_{kind}"]
        ratio = results[f"{kind}_ratio_grouped_over_per_row"]
        print(
            f"  {label}: per row {r['cpu_s_median'] * 1000:.0f} ms CPU ({r['s_median'] * 1000:.0f} wall), grouped "
            f"{g['cpu_s_median'] * 1000:.0f} ms CPU ({g['s_median'] * 1000:.0f} wall): {ratio['cpu']:.2f}x CPU, "
            f"{ratio['wall']:.2f}x wall"
        )
    saved, rss = results["saved_activation_mib"], results["peak_rss"]
    print(f"  activations saved for backward: per row {saved['per_row']:.1f} MiB, grouped {saved['grouped']:.1f} MiB")
    print(
        f"  peak RSS growth of one update: per row {rss['per_row']['peak_rss_growth_mib']:.0f} MiB, grouped "
        f"{rss['grouped']['peak_rss_growth_mib']:.0f} MiB"
    )
    tokens, moved = results["decoder_tokens"], results["input_bytes_to_device"]
    print(
        f"  decoder tokens {tokens['per_row']} -> {tokens['grouped']}; inputs to the device "
        f"{moved['per_row'] / 2**20:.2f} -> {moved['grouped'] / 2**20:.2f} MiB"
    )
    a = results["agreement"]
    print(
        f"  agreement: log-probs {a['logprob_max_abs_diff']:.1e} max abs, LoRA gradients "
        f"{a['lora_grad_max_rel_diff']:.1e} max relative"
    )
    print(f"  load average {results['load_average']}; written to {out.relative_to(ROOT)}")


DPO_BETA = 0.1


def dpo_setup(group: int) -> tuple[Path, list[tuple[int, int]], LearnerBatch, LearnerBatch, LearnerConfig]:
    """K = ``group`` distinct actions at one state, ranked by Q (action 0 the best): every two of
    them a pair, in ``Tree.preference_pairs``'s order; each pair's chosen and rejected rows built
    from their records as ``mcts.pairs.pair_batches`` builds them."""
    model_dir = build_tiny_model()
    processor = load_processor(model_dir)
    records = group_samples(processor.tokenizer, group)
    pairs = list(combinations(range(group), 2))

    def side(index: int) -> LearnerBatch:
        inputs = build_batch(processor, [records[p[index]] for p in pairs])
        return LearnerBatch(inputs=inputs, advantages=torch.zeros(len(pairs)))

    chosen, rejected = side(0), side(1)
    max_completion = int(torch.cat([chosen.inputs.completion_mask, rejected.inputs.completion_mask]).sum(-1).max())
    config = LearnerConfig(
        learning_rate=1e-4,
        lora_r=8,
        lora_alpha=16,
        micro_batch_size=LearnerConfig().micro_batch_size,  # pairs per micro-batch, the trainer's default
        max_tokens=max(64, max_completion),
        adam_eps=1e-3,
    )
    return model_dir, pairs, chosen, rejected, config


def dpo_traffic(learner: Learner, chosen: LearnerBatch, rejected: LearnerBatch) -> dict:
    """Per path: completion rows and tokens (padded) through the decoder in one ``dpo_update``, and
    the input bytes moved to the device, micro-batch by micro-batch as the learner forms them."""
    merge = learner.merge_size
    out = {path: {"completion_rows": 0, "decoder_rows": 0, "decoder_tokens": 0, "input_bytes": 0} for path in PATHS}
    micro_batches = learner.micro_batches(chosen.inputs, range(len(chosen)))
    for rows in micro_batches:
        won, lost = select_rows(chosen.inputs, rows, merge), select_rows(rejected.inputs, rows, merge)
        for side in (won, lost):
            out["per_row"]["completion_rows"] += side.input_ids.shape[0]
            out["per_row"]["decoder_rows"] += side.input_ids.shape[0]
            out["per_row"]["decoder_tokens"] += side.input_ids.numel()
            out["per_row"]["input_bytes"] += nbytes(side)
        packed = pack(won, lost, spatial_merge_size=merge)
        out["grouped"]["completion_rows"] += int(packed.segments.max(-1).values.sum())  # distinct completions
        out["grouped"]["decoder_rows"] += packed.input_ids.shape[0]
        out["grouped"]["decoder_tokens"] += packed.input_ids.numel()
        out["grouped"]["input_bytes"] += nbytes(packed)
    out["micro_batches"] = [len(rows) for rows in micro_batches]
    return out


def dpo_main(args: argparse.Namespace) -> None:
    model_dir, pairs, chosen, rejected, config = dpo_setup(args.group)
    learners = {path: learner(model_dir, config, path) for path in PATHS}  # the same initial adapter
    # The reference is fixed before the step, as the MCTS loop computes it: once, on the default path.
    ref_chosen = learners["grouped"].logprobs(chosen, adapter=False)
    ref_rejected = learners["grouped"].logprobs(rejected, adapter=False)
    ref_per_row = torch.cat(
        [learners["per_row"].logprobs(chosen, adapter=False), learners["per_row"].logprobs(rejected, adapter=False)]
    )
    dpo: dict[str, object] = {
        "actions": args.group,
        "pairs": len(pairs),
        "pairs_per_action": 2 * len(pairs) // args.group,
        "beta": DPO_BETA,
        "micro_batch_size": config.micro_batch_size,
        "adam_eps": config.adam_eps,
        "prompt_tokens": chosen.inputs.prompt_lengths[0],
        # action 0 is the chosen side of pair (0, 1); action k >= 1 the rejected side of pair (0, k)
        "distinct_completion_tokens": int(chosen.inputs.completion_mask[0].sum())
        + sum(int(rejected.inputs.completion_mask[pairs.index((0, k))].sum()) for k in range(1, args.group)),
        "traffic": dpo_traffic(learners["grouped"], chosen, rejected),
        "reference_max_abs_diff": float((torch.cat([ref_chosen, ref_rejected]) - ref_per_row).abs().max()),
    }

    def step(one: Learner) -> dict[str, float]:
        return dpo_update(one, chosen, rejected, ref_chosen, ref_rejected, beta=DPO_BETA)

    def score(one: Learner) -> None:
        one.logprobs(chosen, adapter=False)
        one.logprobs(rejected, adapter=False)

    losses: dict[str, list[float]] = {path: [step(one)["dpo/loss"]] for path, one in learners.items()}  # warm-up
    samples = {f"{path}_{kind}": {"wall": [], "cpu": []} for path in PATHS for kind in ("update", "reference")}
    for _ in range(args.updates):
        for path, one in learners.items():
            metrics: dict[str, float] = {}
            wall, cpu = timed(lambda one=one, metrics=metrics: metrics.update(step(one)))
            losses[path].append(metrics["dpo/loss"])
            samples[f"{path}_update"]["wall"].append(wall)
            samples[f"{path}_update"]["cpu"].append(cpu)
            wall, cpu = timed(lambda one=one: score(one))
            samples[f"{path}_reference"]["wall"].append(wall)
            samples[f"{path}_reference"]["cpu"].append(cpu)
    for key, s in samples.items():
        dpo[key] = {"s_median": statistics.median(s["wall"]), "cpu_s_median": statistics.median(s["cpu"])}
    for kind in ("update", "reference"):
        per_row, grouped = dpo[f"per_row_{kind}"], dpo[f"grouped_{kind}"]
        dpo[f"{kind}_ratio_grouped_over_per_row"] = {
            "wall": grouped["s_median"] / per_row["s_median"],
            "cpu": grouped["cpu_s_median"] / per_row["cpu_s_median"],
        }
    state_r, state_g = learners["per_row"].trainable_state(), learners["grouped"].trainable_state()
    initial = learner(model_dir, config, "grouped").trainable_state()
    dpo["agreement"] = {
        "steps": len(losses["grouped"]),
        "losses": losses,
        "loss_max_rel_diff": max(
            abs(g - r) / abs(r) for g, r in zip(losses["grouped"], losses["per_row"], strict=True)
        ),
        "weights_max_abs_diff": max(float((state_g[n] - state_r[n]).abs().max()) for n in state_r),
        "weights_max_abs_change": max(float((state_g[n] - initial[n]).abs().max()) for n in state_g),
    }
    dpo["load_average"] = os.getloadavg()

    out = ROOT / "bench" / "results" / "grouped_prompt.json"
    results = json.loads(out.read_text()) if out.exists() else {}
    results["dpo"] = dpo
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    dpo_report(dpo, out)


def dpo_report(dpo: dict, out: Path) -> None:
    t = dpo["traffic"]
    print(
        f"tiny Qwen3-VL, DPO on {dpo['pairs']} pairs among {dpo['actions']} actions at one prompt of "
        f"{dpo['prompt_tokens']} tokens, micro-batches of {dpo['micro_batch_size']} pairs {t['micro_batches']}"
    )
    for kind, label in (("update", "dpo_update"), ("reference", "reference scoring of both sides")):
        r, g = dpo[f"per_row_{kind}"], dpo[f"grouped_{kind}"]
        ratio = dpo[f"{kind}_ratio_grouped_over_per_row"]
        print(
            f"  {label}: per row {r['cpu_s_median']:.2f} s CPU ({r['s_median']:.2f} wall), grouped "
            f"{g['cpu_s_median']:.2f} s CPU ({g['s_median']:.2f} wall): {ratio['cpu']:.2f}x CPU, "
            f"{ratio['wall']:.2f}x wall"
        )
    r, g = t["per_row"], t["grouped"]
    print(
        f"  per step: completion rows {r['completion_rows']} -> {g['completion_rows']}, decoder rows "
        f"{r['decoder_rows']} -> {g['decoder_rows']}, decoder tokens {r['decoder_tokens']} -> {g['decoder_tokens']}, "
        f"inputs to the device {r['input_bytes'] / 2**20:.1f} -> {g['input_bytes'] / 2**20:.1f} MiB"
    )
    a = dpo["agreement"]
    print(
        f"  agreement over {a['steps']} steps: loss {a['loss_max_rel_diff']:.1e} max relative, weights "
        f"{a['weights_max_abs_diff']:.1e} max abs (they moved up to {a['weights_max_abs_change']:.1e}); "
        f"reference log-probs {dpo['reference_max_abs_diff']:.1e}"
    )
    print(f"  load average {dpo['load_average']}; written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
