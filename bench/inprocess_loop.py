"""The trainer's own GRPO loop run in this process, against a private stack.

What ``bench/bench_loop.py`` and ``experiments/learning_probe.py`` share: a private stack (clone
server, env, reward, vLLM on the CPU and its own redis-server, on its own ports and data folder;
the trainer service is not started), and one ``GrpoLoop.run`` with the trainer's rollout workers
(``halo_trainer.worker.work``, as many as the trainer runs) beside it, as the trainer
service runs them. The caller builds the run's config and learner and may wrap the loop's methods
(``instrument``) to count or measure what it needs; nothing here learns, samples or scores.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from halo.settings.trainer import TrainerSettings
    from halo_trainer.config import RunConfig
    from halo_trainer.grpo.loop import GrpoLoop
    from halo_trainer.learner.learner import Learner

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ("sites", "env", "reward", "policy")


def stack_env(base: int, redis_port: int, data_dir: Path, model: str) -> dict[str, str]:
    """The private stack's settings (docs/stack.md): own ports, own Redis, own data folder, the shared tiny model."""
    url = {name: f"http://127.0.0.1:{base + i}" for i, name in enumerate(("sites", "env", "reward", "policy"))}
    return {
        "HALO_DATA_DIR": str(data_dir),
        "HALO_STACK_REDIS_PORT": str(redis_port),
        "HALO_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "HALO_SITES_PORT": str(base),
        "HALO_ENV_PORT": str(base + 1),
        "HALO_REWARD_PORT": str(base + 2),
        "HALO_POLICY_PORT": str(base + 3),
        "HALO_TRAINER_PORT": str(base + 4),
        "HALO_ENV_SITES_URL": url["sites"],
        "HALO_TRAINER_ENV_URL": url["env"],
        "HALO_TRAINER_REWARD_URL": url["reward"],
        "HALO_TRAINER_POLICY_URL": url["policy"],
        # The tiny model lives in the default data folder; this stack's folder would build another copy.
        "HALO_POLICY_MODEL": model,
        "HALO_TRAINER_MODEL": model,
    }


def halo(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "halo.cli.main", *args], env=env, cwd=ROOT, text=True)
    if done.returncode != 0:
        raise SystemExit(f"halo {' '.join(args)} failed ({done.returncode})")


@contextlib.contextmanager
def private_stack(base: int, redis_port: int, data_dir: Path, model: str) -> Iterator[dict[str, str]]:
    """A private stack (``SERVICES`` and a redis-server) for the block, its settings also in this
    process's environment (the trainer settings built inside read them); stopped on the way out."""
    env = {**os.environ, **stack_env(base, redis_port, data_dir, model)}
    os.environ.update(env)
    halo(env, "stack", "up", *[a for s in SERVICES for a in ("-s", s)])
    try:
        yield env
    finally:
        halo(env, "stack", "down")


@dataclass
class LoopRun:
    """One finished ``GrpoLoop.run``: the loop (its counters, learner, parts), how it ended, when it
    started (``time.monotonic``) and how long it took (the whole run, evaluations included)."""

    loop: GrpoLoop
    outcome: str
    started: float
    wall_s: float


async def run_grpo(
    cfg: RunConfig,
    learner: Learner,
    processor: Any,
    settings: TrainerSettings,
    *,
    worker_prefix: str,
    instrument: Callable[[GrpoLoop], None] | None = None,
) -> LoopRun:
    """``cfg`` trained to its end by the trainer's ``GrpoLoop`` and rollout workers in this process.

    The run folder is ``settings.runs_dir / cfg.run_id`` (metrics.jsonl, eval.jsonl, episodes.jsonl,
    checkpoints); ``instrument(loop)`` is called before the run starts. At the end vLLM is given back
    what it served before (``GrpoLoop.release_weights``, as the run manager does), and the workers,
    clients and Redis connection are closed.
    """
    import redis.asyncio as aioredis

    from halo.screenshots import ScreenshotStore
    from halo_trainer.grpo.loop import GrpoLoop
    from halo_trainer.rollout.services import make_services
    from halo_trainer.worker import work

    redis = aioredis.from_url(settings.redis_url)
    services = make_services(settings, redis)
    loop = GrpoLoop(
        cfg,
        redis=redis,
        policy=services.policy,
        learner=learner,
        processor=processor,
        store=ScreenshotStore(settings.screenshots_dir),
        run_dir=settings.runs_dir / cfg.run_id,
        settings=settings,
    )
    if instrument is not None:
        instrument(loop)
    stop_workers = asyncio.Event()
    workers = [
        asyncio.create_task(work(f"{worker_prefix}-{i}", redis, services, settings, stop_workers))
        for i in range(settings.rollout_workers)
    ]
    started = time.monotonic()
    try:
        outcome = await loop.run(asyncio.Event())
        wall = time.monotonic() - started
        await loop.release_weights()
    finally:
        stop_workers.set()
        for w in workers:  # a worker in the middle of a job (none after a finished run) is not waited for
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        for client in (services.env, services.reward, services.policy):
            await client.aclose()
        await redis.aclose()
    return LoopRun(loop=loop, outcome=outcome, started=started, wall_s=wall)
