"""The numbers of an evaluation: per-mode rates with Wilson intervals, and the paired test between two modes.

An episode record (one line of ``episodes.jsonl``) is scored when one of its attempts finished
without an infrastructure failure; one whose every attempt failed on infrastructure is counted
apart and never enters a rate.

pass@1 is the share of scored episodes that succeeded; pass^k (tau-bench's) the share of tasks
that succeeded on every one of their k seeds, k the seeds per task: a policy that wins a task by
memorising one start passes it at pass@1 now and then but rarely on all k perturbed starts.

The paired test is the exact McNemar test (a two-sided sign test on the discordant pairs): of the
(task, seed) pairs both modes played, ``b`` succeeded only with mode A and ``c`` only with B; under
"no difference" each discordant pair is a fair coin, so p = P(Binomial(b+c, 1/2) as far from the
middle as min(b, c)). Concordant pairs say nothing about which mode is better and are left out.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence

from halo_trainer.observe.metrics import wilson_interval


def rate(successes: int, n: int) -> dict:
    low, high = wilson_interval(successes, n)
    return {"successes": successes, "n": n, "rate": successes / n if n else None, "ci_low": low, "ci_high": high}


def pass_hat_k(scored: Sequence[dict]) -> dict:
    """Tasks that succeeded on all their k seeds, over the tasks with all k scored (Wilson interval)."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in scored:
        by_task[r["task"]].append(r["success"])
    k = max((len(v) for v in by_task.values()), default=0)
    full = [v for v in by_task.values() if len(v) == k]
    return {"k": k, **rate(sum(all(v) for v in full), len(full))}


def mode_summary(records: Iterable[dict]) -> dict:
    """pass@1 with its 95% Wilson interval, pass^k, per-site rates, mean return, median steps, validity, infra."""
    records = list(records)
    scored = [r for r in records if r["scored"]]
    by_site: dict[str, list[bool]] = defaultdict(list)
    for r in scored:
        by_site[r["site"]].append(r["success"])
    steps = sum(r["steps"] for r in scored)
    return {
        **rate(sum(r["success"] for r in scored), len(scored)),
        "pass_hat_k": pass_hat_k(scored),
        "sites": {site: rate(sum(v), len(v)) for site, v in sorted(by_site.items())},
        "mean_return": statistics.fmean(r["return"] for r in scored) if scored else None,
        "median_steps": statistics.median(r["steps"] for r in scored) if scored else None,
        "action_validity": sum(r["valid_actions"] for r in scored) / steps if steps else None,
        "infra_failures": sum(r["infra_failures"] for r in records),
        "unscored_episodes": len(records) - len(scored),
    } | _oracle(scored)


def _oracle(scored: list[dict]) -> dict:
    """For a mode searching at test time: the share of searches that reached a success anywhere (the
    env's validator on every rollout), beside pass@1 of the paths they returned, replayed."""
    oracle = [r["oracle_success_found"] for r in scored if "oracle_success_found" in r]
    return {"oracle_success_found": rate(sum(oracle), len(oracle))} if oracle else {}


def exact_mcnemar(b: int, c: int) -> float:
    """Two-sided exact p-value for ``b`` and ``c`` discordant pairs (1.0 when there are none)."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_test(a: Sequence[dict], b: Sequence[dict]) -> dict:
    """Mode A against mode B on the (task, seed) pairs both scored."""
    outcome_b = {(r["task"], r["seed"]): r["success"] for r in b if r["scored"]}
    pairs = [
        (r["success"], outcome_b[(r["task"], r["seed"])])
        for r in a
        if r["scored"] and (r["task"], r["seed"]) in outcome_b
    ]
    only_a = sum(x and not y for x, y in pairs)
    only_b = sum(y and not x for x, y in pairs)
    return {
        "pairs": len(pairs),
        "only_a": only_a,
        "only_b": only_b,
        "both": sum(x and y for x, y in pairs),
        "neither": sum(not x and not y for x, y in pairs),
        "p_value": exact_mcnemar(only_a, only_b),
    }
