"""``halo doctor``: the first-boot self-check of the running stack, in the order a run depends on it.

    python -m halo_trainer.doctor [--domain playground] [--out <data_dir>/doctor.json] [--json]

It reads the trainer's settings only, so it checks the stack the trainer would train on: run it
where the trainer runs (on the embedded stack the CLI's machine; on Compose inside the trainer
container, as ``make doctor`` does), and its learner is the one a run gets there.

0. env screenshot: a task's first page from the env service (else a drawn page, so the rest still run);
1. served model: vLLM answers the screenshot prompt as a run asks it, with an action that parses;
2. adapter: a random LoRA adapter of the run's rank loads, changes a sample, and unloads;
3. parity free-form / grammar: the learner's log-probs against vLLM's on the same samples;
4. update time / memory: one update of that learner, timed, its peak against the memory plan.

The report is written as JSON (``halo.schemas.doctor.DoctorReport``) and printed as a table; the exit
status is 1 when any check fails, 2 when the settings themselves are invalid.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from halo.clients import EnvClient
from halo.schemas import RunSpec
from halo.schemas.doctor import DoctorCheck, DoctorReport
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo.transport import CallError
from halo_trainer.config import load_defaults, profile_for, resolve
from halo_trainer.doctor.adapter import one_adapter
from halo_trainer.doctor.parity import parity
from halo_trainer.doctor.peak_memory import PeakMemory
from halo_trainer.doctor.samples import drawn_screen, env_screen
from halo_trainer.doctor.served import served_model
from halo_trainer.doctor.table import table
from halo_trainer.doctor.update import one_update
from halo_trainer.learner import ranks
from halo_trainer.learner.for_run import learner_model, learner_parts, memory_plan
from halo_trainer.rollout.services import policy_client

MAX_UPDATE_S = 120.0  # one group's update: seconds on the tiny model, tens on a card with the 8B


async def run(settings: TrainerSettings, domain: str, max_update_s: float) -> DoctorReport:
    started = time.time()
    run_cfg = resolve(
        RunSpec(domain=domain), "doctor", [domain], load_defaults(settings.rl_config), profile_for(settings.target)
    )
    sampling, device = run_cfg.sampling, settings.resolved_device()
    checks: list[DoctorCheck] = []
    folder = settings.data_dir / "doctor"  # vLLM reads the adapter here (Compose: the shared data volume)

    def report() -> DoctorReport:
        return DoctorReport(
            target=settings.target,
            model=learner_model(settings, build=False),
            policy_url=settings.policy_url,
            device=device,
            started_at=started,
            seconds=time.time() - started,
            checks=checks,
        )

    env = EnvClient(settings.env_url, timeout_s=settings.request_timeout_s)
    policy = policy_client(settings)
    try:
        # 0. A real screenshot, or a drawn one: the model checks need one either way.
        try:
            screen = await env_screen(env, domain)
            checks.append(DoctorCheck(name="env screenshot", ok=True, detail=screen.source))
        except (CallError, LookupError) as exc:
            screen = drawn_screen(sampling.viewport)
            fix = (
                f"the env service at {settings.env_url} gives no {domain} page: `halo health` says which service fails"
            )
            checks.append(DoctorCheck(name="env screenshot", ok=False, detail=str(exc)[:160], fix=fix))

        # 1. The served model.
        try:
            checks.append(await served_model(policy, screen, sampling))
        except CallError as exc:
            fix = f"vLLM at {settings.policy_url} does not answer: start the stack (`halo stack up`, `make up`)"
            checks.append(DoctorCheck(name="served model", ok=False, detail=str(exc)[:160], fix=fix))
            return report()  # nothing below can run without it

        # 2. One adapter, of the rank a run loads.
        parts = learner_parts(settings, run_cfg)
        try:
            checks.append(await one_adapter(policy, parts, screen, sampling, folder, settings.resolved_dtype()))
        except CallError as exc:
            checks.append(
                DoctorCheck(name="adapter", ok=False, detail=str(exc)[:160], fix="see the policy service's log")
            )

        # 3. The learner a run gets here, and its parity with vLLM in both ways of sampling.
        plan = memory_plan(settings, run_cfg, parts)  # before the learner loads: the card as a run's start sees it
        memory = PeakMemory(device)
        memory.start()
        learner = ranks.build(
            parts.model_path, parts.config, device=device, dtype=settings.resolved_dtype(), seed=run_cfg.seed
        )
        store = ScreenshotStore(folder / "screenshots")
        batches = {}
        for mode in ("off", "regex"):
            check, batches[mode] = await parity(
                policy,
                learner,
                parts.processor,
                screen,
                sampling.model_copy(update={"structured_outputs": mode}),
                store,
                n=run_cfg.num_generations,
                temperature=run_cfg.temperature,
                alarm=run_cfg.behaviour_gap_alarm or 0.05,
            )
            checks.append(check)

        # 4. One update on the run's own way of sampling (the other when that one had no samples).
        batch = batches[sampling.structured_outputs] or next((b for b in batches.values() if b is not None), None)
        if batch is None:
            checks.append(DoctorCheck(name="update", ok=False, detail="no scorable samples", fix="run it again"))
        else:
            checks.extend(one_update(learner, batch, plan, memory, max_update_s))
    finally:
        await policy.aclose()
        await env.aclose()
    return report()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="halo doctor", description=__doc__.split("\n\n")[0].strip("`").replace("``halo doctor``: ", "")
    )
    parser.add_argument("--domain", default="playground", help="the site whose first task gives the screenshot")
    parser.add_argument("--out", type=Path, help="the report's JSON (default: <data_dir>/doctor.json)")
    parser.add_argument("--max-update-s", type=float, default=MAX_UPDATE_S, help="the update time check's threshold")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of the table")
    args = parser.parse_args(argv)
    try:
        settings = TrainerSettings()
    except ValidationError as exc:
        first = exc.errors()[0]
        sys.stderr.write(f"error: invalid trainer settings: {'.'.join(map(str, first['loc']))}: {first['msg']}\n")
        return 2
    report = asyncio.run(run(settings, args.domain, args.max_update_s))
    out = args.out or settings.data_dir / "doctor.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.model_dump_json(indent=1) + "\n")
    sys.stdout.write((report.model_dump_json(indent=1) if args.json else table(report)) + "\n")
    if not args.json:
        sys.stdout.write(f"report: {out}\n")
    return 0 if report.ok else 1
