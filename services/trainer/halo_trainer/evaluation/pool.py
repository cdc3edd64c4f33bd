"""The evaluation's task pool: which tasks a ``halo eval`` plays, and with which held-out seeds.

``--tasks``; ``--suite real-v2-offline`` (REAL's v2 tasks the offline clones support, the rest with
their reasons); a registry snapshot's tasks of the sites ``--domain`` / ``--subset`` name; else the
env service's tasks of those sites. Sites that do not answer are left out with a note.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path

from halo.clients import EnvClient
from halo.schemas import Task
from halo.transport import CallError
from halo_trainer.config import EVAL_SEED_OFFSET

# Groups of REAL v2 sites (and the local-only playground) that --subset names.
SUBSETS: dict[str, tuple[str, ...]] = {
    "shopping": ("omnizon", "dashdish"),
    "travel": ("staynb", "marrisuite", "udriver", "opendining"),
    "productivity": ("gomail", "gocalendar", "networkin", "topwork"),
    "housing": ("zilloft",),
    "local": ("playground",),
}


SUITES = ("real-v2-offline",)
REAL_OFFLINE = "real-offline."


class EvalError(Exception):
    """The evaluation cannot start as asked (the message says why)."""


def site_of(task_id: str) -> str:
    # local.gomail-3 / v2.gomail-3 / real-offline.gomail-3 -> gomail
    return task_id.split(".", 1)[-1].rsplit("-", 1)[0]


def sample_tasks(pool: Sequence[str], size: int | None, seed: int) -> list[str]:
    """``size`` tasks of ``pool`` (all when None), the same for the same pool and seed whatever its order."""
    ordered = sorted(set(pool))
    if size is None or size >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, size))


def episode_seeds(seed: int, episodes_per_task: int) -> list[int]:
    """Held-out seeds (never a training seed: EVAL_SEED_OFFSET), derived from the evaluation's seed."""
    return [EVAL_SEED_OFFSET + seed * 1000 + j for j in range(episodes_per_task)]


def load_registry(path: Path) -> list[Task]:
    try:
        data = json.loads(path.read_text())
        return [Task.model_validate(t) for t in (data["tasks"] if isinstance(data, dict) else data)]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EvalError(f"cannot read the task registry {path}: {exc}") from exc


async def _reachable(env: EnvClient, sites: Sequence[str]) -> dict[str, bool]:
    reachable: dict[str, bool] = {}
    for site in dict.fromkeys(sites):
        try:
            reachable |= {r.task_id: r.reachable for r in await env.reachability(site)}
        except CallError as exc:
            raise EvalError(f"cannot list and probe the {site} tasks on the env service: {exc}") from exc
    return reachable


async def suite_pool(env: EnvClient) -> tuple[list[str], list[str], list[dict]]:
    """``real-v2-offline``: REAL's v2 tasks the clones support, notes, and the tasks left out with why."""
    try:
        offline = sorted(t.id for t in await env.tasks() if t.id.startswith(REAL_OFFLINE))
        left = [t.model_dump(mode="json") for t in await env.left_out()]
    except CallError as exc:
        raise EvalError(f"cannot list the REAL v2 offline tasks on the env service: {exc}") from exc
    reachable = await _reachable(env, sorted({site_of(t) for t in offline}))
    pool = [t for t in offline if reachable.get(t)]
    left += [
        {"task_id": "v2." + t.removeprefix(REAL_OFFLINE), "site": site_of(t), "reason": "its clone did not answer"}
        for t in offline
        if not reachable.get(t)
    ]
    if not pool:
        raise EvalError("no REAL v2 offline task answers; is the stack up (`halo stack up`)?")
    notes = [f"REAL v2 offline: {len(pool)} of {len(pool) + len(left)} tasks; {len(left)} left out (left_out.json)"]
    return pool, notes, sorted(left, key=lambda t: t["task_id"])


async def task_pool(env: EnvClient, args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The tasks to sample from and notes on what was left out or replaced."""
    if args.tasks:
        return list(args.tasks), []
    registry = load_registry(Path(args.task_registry)) if args.task_registry else None
    sites = list(args.domain or [])
    for subset in args.subset or []:
        if subset not in SUBSETS:
            raise EvalError(f"unknown subset {subset!r}; subsets: {', '.join(SUBSETS)}")
        sites += SUBSETS[subset]
    if not sites:
        if registry is None:
            raise EvalError("name the tasks: --tasks, --domain, --subset or --task-registry")
        sites = sorted({t.domain for t in registry})
    notes: list[str] = []
    reachable = await _reachable(env, sites)
    if registry is not None:
        wanted = [t.id for t in registry if t.domain in sites]
        kept = [t for t in wanted if reachable.get(t)]
        if kept:
            if len(kept) < len(wanted):
                notes.append(f"left out {len(wanted) - len(kept)} registry tasks whose site did not answer")
            return kept, notes
        notes.append(
            f"none of the registry's {len(wanted)} tasks on {', '.join(dict.fromkeys(sites))} answered "
            "(offline?): evaluating on the local clones of those sites instead"
        )
    hosted = {t.id for t in registry} if registry is not None else set()
    pool = [t for t, ok in reachable.items() if ok and t not in hosted]
    left = sum(not ok for t, ok in reachable.items() if t not in hosted)
    if left:
        notes.append(f"left out {left} tasks whose site did not answer")
    if not pool:
        raise EvalError(f"no reachable task on {', '.join(dict.fromkeys(sites))}; is the stack up (`halo stack up`)?")
    return pool, notes
