"""What the seed-style training scripts share: check vLLM, then hand the run to ``halo train``.

The trainer a CLI starts samples from ``policy_url`` (the trainer's own setting) and listens on
``trainer_url``'s port; this process becomes the CLI, so its exit status is the run's.
"""

from __future__ import annotations

import os
import sys

import httpx


def exec_halo_train(policy_url: str, trainer_url: str, train_args: list[str]) -> int:
    """Return 2 if vLLM at ``policy_url`` is unreachable or unhealthy; else replace this process with ``halo train``."""
    try:
        health = httpx.get(f"{policy_url.rstrip('/')}/health", timeout=5)
    except httpx.HTTPError as exc:
        print(f"error: vLLM not reachable at {policy_url}: {exc}", file=sys.stderr)
        return 2
    if health.status_code != 200:
        print(f"error: vLLM at {policy_url} is not healthy ({health.status_code})", file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", "halo.cli.main", "train", *train_args]
    env = {
        **os.environ,
        "HALO_TRAINER_PORT": trainer_url.rsplit(":", 1)[-1].rstrip("/"),
        "HALO_TRAINER_POLICY_URL": policy_url,
    }
    os.execvpe(cmd[0], cmd, env)
    return 0
