"""The GPU pre-flight: read the cards before vLLM starts and refuse what they cannot run, in seconds.

On a card below ~45 GB vLLM cannot hold the 8B in its 0.45 share: without this step the policy
container restarted in a loop, `make up` waited 30 minutes calling it pending, and the trainer, whose
memory check says why, never started. Compose runs this once (the one-shot `preflight` service, which
the policy waits for) and `make up` runs it first, so the refusal comes in seconds, in one line.

Everything a card can refuse is checked before anything large starts (a download, vLLM): that Docker
gave the container a card at all and nvidia-smi answers (halo.cli.gpu_cards), the driver against the
images' CUDA build and each card's compute capability (halo.cli.gpu_build, from the GPU lock), the
memory plan on the cards' totals and then on their free memory, and disk space for the weights
(halo.cli.gpu_disk). Each refusal is one line with its fix; all of them are printed at once.

The memory numbers are the memory plan's (`halo memory-plan`, the trainer's): this module reads the
cards with one nvidia-smi call, asks the plan about them, and words its verdict. It runs as
``python -m halo.cli.gpu_preflight --policy-gpu 0 --trainer-gpu 0`` (``--trainer-gpu 1,2``: a learner
rank on each) in the trainer's image, whose environment (the stack's env file) holds every setting
the plan reads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from halo.cli import gpu_build, gpu_disk
from halo.cli.gpu_cards import GpuCard, PreflightError, pick, pick_list, read_cards

# Memory another process already holds on a card before the stack starts, worth a note (GiB).
BUSY_GIB = 1.0
DOCS = 'docs/compose.md, "Supported GPU layouts"'
PREFIX = "gpu pre-flight"
__all__ = ["GpuCard", "Layout", "PreflightError", "decide", "memory_in_use", "pick", "pick_list", "run_plan"]


@dataclass(frozen=True)
class Layout:
    """Where vLLM and the learner's ranks run (one card each), and vLLM's share of its card."""

    policy: GpuCard
    learners: tuple[GpuCard, ...]
    utilization: float
    model: str | None = None  # HALO_MODEL when it is not the 8B the plan knows by heart

    @property
    def shares_card(self) -> bool:
        return any(card.index == self.policy.index for card in self.learners)

    @property
    def cards(self) -> list[GpuCard]:
        """Every card of the layout, once each."""
        return list({card.index: card for card in (self.policy, *self.learners)}.values())

    def plan_args(self) -> list[str]:
        """`halo memory-plan` arguments for this layout. Cards of different sizes are planned as cards of the
        smallest (the plan takes one size), and every rank as if it shared vLLM's card when one does: a
        stricter check, never a looser one."""
        gib = min(card.total_gib for card in self.cards)
        args = ["--card-gib", f"{gib:.2f}", "--gpu-memory-utilization", f"{self.utilization:.2f}"]
        if len(self.learners) > 1:
            args += ["--learner-gpus", str(len(self.learners))]
        if self.model:
            args += ["--model", self.model]
        return args if self.shares_card else [*args, "--two-cards"]

    def describe(self) -> str:
        vllm = f"vLLM ({self.utilization:.2f} of it)"
        if len(self.learners) == 1 and self.shares_card:
            return f"{vllm} and the learner share {self.policy.label()}"
        if len(self.learners) == 1:
            return f"{vllm} on {self.policy.label()}, the learner on {self.learners[0].label()}"
        ranks = ", ".join(card.label() for card in self.learners)
        return f"{vllm} on {self.policy.label()}, the learner's {len(self.learners)} ranks on {ranks}"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    lines: list[str]


def decide(layout: Layout, plan: dict[str, Any], *, memory_check: bool = True) -> Verdict:
    """The pre-flight's answer from the memory plan's JSON (``halo memory-plan --json``): vLLM's share
    must hold vLLM (or it cannot start at all); the learner must fit unless its memory check is off."""
    lines = [f"{PREFIX}: {layout.describe()}"]
    command = "halo memory-plan " + " ".join(layout.plan_args())
    vllm_fits = plan["vllm_share_gib"] >= plan["vllm_need_gib"]
    if plan["fits"]:
        lines.append(f"{PREFIX}: the memory plan fits, {plan['headroom_gib']:.1f} GiB to spare ({command})")
        return Verdict(True, lines)
    if vllm_fits and not memory_check:
        lines.append(
            f"{PREFIX}: the learner does not fit ({plan['problem']}); starting anyway: HALO_TRAINER_MEMORY_CHECK=false"
        )
        return Verdict(True, lines)
    what = "vLLM cannot start" if not vllm_fits else "the learner will not fit"
    lines.append(
        f"{PREFIX}: refusing this layout, {what}: {plan['problem']}. Fix: {plan['fix']}. "
        f"The whole plan: {command}; the layouts: {DOCS}"
    )
    return Verdict(False, lines)


def memory_in_use(
    layout: Layout, plan: dict[str, Any], *, memory_check: bool = True, stack_running: str | None = None
) -> tuple[list[str], list[str]]:
    """Notes and refusals from each card's free memory (nvidia-smi's memory.free) against what this layout
    puts on it: vLLM refuses to start when less than its share is free, and the learner's peak comes on
    top on its cards. Memory held while the stack's own vLLM answers (``stack_running``: its address; a
    second `make up`) is taken as the stack's, not another process's."""
    notes: list[str] = []
    refusals: list[str] = []
    learner_cards = {card.index for card in layout.learners}
    for card in layout.cards:
        parts = []
        if card.index == layout.policy.index:
            parts.append((f"vLLM's {layout.utilization:.2f} share", layout.utilization * card.total_gib))
        if card.index in learner_cards and memory_check:
            parts.append(("the learner's peak", plan["learner_peak_gib"]))
        need = sum(gib for _, gib in parts)
        free = card.free_gib
        if free is None:
            notes.append(f"note: nvidia-smi reports no free memory for card {card.index}: not checked")
        elif free >= need:
            busy = f" ({card.used_gib:.1f} GiB in use already)" if card.used_gib >= BUSY_GIB else ""
            notes.append(f"card {card.index}: {free:.1f} GiB free{busy}, this layout puts {need:.1f} GiB on it")
        elif stack_running:
            notes.append(
                f"note: card {card.index} has {free:.1f} GiB free, taken as the running stack's own "
                f"(its vLLM answers at {stack_running}): free memory not checked"
            )
        else:
            wanted = " + ".join(f"{name} {gib:.1f}" for name, gib in parts)
            refusals.append(
                f"card {card.index} ({card.name}) has {free:.1f} GiB free, {card.used_gib:.1f} GiB already in use by "
                f"another process, but this layout needs {need:.1f} GiB of it ({wanted}). Fix: stop what holds it "
                "(`nvidia-smi` on the host lists it) or give the stack free cards (HALO_POLICY_GPU, HALO_TRAINER_GPU)"
            )
    return notes, refusals


def answers(address: str | None, timeout: float = 3.0) -> bool:
    """Whether something accepts connections at ``host:port`` (the stack's vLLM, on Compose's network),
    within ``timeout`` including the name lookup, which Docker's DNS may forward outside."""
    if not address:
        return False
    host, _, port = address.rpartition(":")
    result: list[bool] = []

    def connect() -> None:
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                result.append(True)
        except (OSError, ValueError):
            pass

    probe = threading.Thread(target=connect, daemon=True)
    probe.start()
    probe.join(timeout)
    return bool(result)


def run_plan(args: Sequence[str]) -> dict[str, Any]:
    """The memory plan's JSON for these arguments, from the trainer's own command (a child, as `halo`
    runs it: this package imports no service)."""
    halo = shutil.which("halo") or os.path.join(os.path.dirname(sys.executable), "halo")
    done = subprocess.run([halo, "memory-plan", *args, "--json"], capture_output=True, text=True, timeout=300)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise PreflightError(
            f"halo memory-plan failed (exit {done.returncode}): {said[-1] if said else 'no output'}"
        ) from None


@dataclass(frozen=True)
class Settings:
    target: str
    utilization: float  # vLLM's share of its card
    memory_check: bool
    policy_shares_card: bool  # what the trainer believes; the cards say what is true
    model: str  # HALO_MODEL as the trainer gets it
    learner_ranks: int
    policy_dtype: str
    learner_dtype: str

    @property
    def other_model(self) -> str | None:
        """The model when it is not the 8B the plan knows by heart."""
        from halo.settings.policy import GPU_DEFAULT_MODEL

        return self.model if self.model not in ("", GPU_DEFAULT_MODEL) else None


def _settings() -> Settings:
    """What the pre-flight reads, from the settings' owners."""
    from pydantic import ValidationError

    from halo.settings.policy import GPU_DEFAULT_MODEL, PolicySettings
    from halo.settings.trainer import TrainerSettings

    try:
        trainer = TrainerSettings()
        policy = PolicySettings()
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(x) for x in error["loc"])
        raise PreflightError(f"a setting is not valid: {where}: {error['msg']}") from None
    return Settings(
        trainer.target,
        policy.gpu_memory_utilization,
        trainer.memory_check,
        trainer.policy_shares_card,
        trainer.model or GPU_DEFAULT_MODEL,
        trainer.learner_ranks,
        policy.resolved_dtype(),
        trainer.resolved_dtype(),
    )


def layout_problems(layout: Layout, settings: Settings, trainer_gpus: str) -> list[str]:
    """The trainer's beliefs against the cards Compose gives: vLLM elsewhere (its memory plan then counts
    the whole card; the two-card file without HALO_TRAINER_GPU=1 puts vLLM's 0.90 share and the learner on
    one card), and one learner rank a card."""
    problems = []
    if layout.shares_card and not settings.policy_shares_card:
        problems.append(
            f"HALO_TRAINER_POLICY_SHARES_CARD=false (docker-compose.two-gpu.yml) but vLLM and the learner are "
            f"both on card {layout.policy.index}: set HALO_TRAINER_GPU=1 for two cards, or drop "
            "docker-compose.two-gpu.yml for one"
        )
    cards = len(layout.learners)
    if cards != settings.learner_ranks:
        problems.append(
            f"HALO_TRAINER_GPU={trainer_gpus} gives the learner {cards} card(s) but HALO_TRAINER_LEARNER_RANKS="
            f"{settings.learner_ranks} (one rank a card): set HALO_TRAINER_LEARNER_RANKS={cards} in .env, or list "
            f"{settings.learner_ranks} card(s) in HALO_TRAINER_GPU"
        )
    return problems


def _build_checks(
    layout: Layout, settings: Settings, build: gpu_build.CudaBuild | None, lock: Path | None
) -> tuple[list[str], list[str]]:
    """The driver and the compute capabilities against the images' CUDA build."""
    if build is None:
        where = str(lock) if lock else " or ".join(map(str, gpu_build.LOCK_PATHS))
        return [f"note: no CUDA build read from {where}: driver and compute capability not checked"], []
    notes, refusals = [], []
    if build.min_driver is None:
        notes.append(f"note: no minimum driver known for {build.name} ({build.source}): the driver is not checked")
    elif problem := gpu_build.driver_problem(layout.cards, build):
        refusals.append(problem)
    else:
        notes.append(f"driver {layout.policy.driver}: {build.name} needs {build.min_driver} or newer")
    if build.arches is None:
        notes.append(f"note: no architecture list known for {build.name}: compute capability checked for bfloat16 only")
    roles = [("vLLM", layout.policy, settings.policy_dtype)]
    roles += [("the learner", card, settings.learner_dtype) for card in layout.learners]
    seen: set[str] = set()
    for problem in gpu_build.capability_problems(roles, build):
        if problem not in seen:
            seen.add(problem)
            refusals.append(problem)
    return notes, refusals


def _disk_needs(settings: Settings, plan: dict[str, Any] | None) -> tuple[list[gpu_disk.DiskNeed], list[str]]:
    cache = gpu_disk.hub_cache()
    needs = [
        gpu_disk.DiskNeed(
            Path("/"), "Docker's data root", gpu_disk.RUNTIME_GIB, "the containers' caches and checkpoints"
        )
    ]
    notes = []
    if not gpu_disk.is_hub_name(settings.model):
        notes.append(f"disk: HALO_MODEL={settings.model} is a path, not a Hub name: nothing to download")
    elif plan is None:
        notes.append(f"note: the size of HALO_MODEL={settings.model} is not known here: its download is not checked")
    else:
        held = gpu_disk.cached_gib(cache, settings.model)
        left = max(0.0, plan["bf16_weights_gib"] - held)
        what = f"{settings.model}'s weights" + (f" ({held:.1f} GiB already cached)" if held else "")
        needs.insert(0, gpu_disk.DiskNeed(cache, "the Hugging Face cache", left, what))
    return needs, notes


def preflight(args: argparse.Namespace) -> tuple[bool, list[str]]:
    """Every check, each refusal one line: (whether the stack may start, the lines to print)."""
    settings = _settings()
    if settings.target != "gpu":
        return True, [f"{PREFIX}: the {settings.target} target uses no card: nothing to check"]
    lock = Path(args.lock) if args.lock else gpu_build.find_lock()
    build = gpu_build.read_build(lock) if lock and lock.is_file() else None
    hint = (
        f"{build.driver_fix()} (the images' {build.name} build needs it)"
        if build
        else "update the host's NVIDIA driver"
    )
    cards = read_cards(hint)
    layout = Layout(
        pick(cards, args.policy_gpu, "HALO_POLICY_GPU"),
        pick_list(cards, args.trainer_gpu, "HALO_TRAINER_GPU"),
        settings.utilization,
        settings.other_model,
    )
    notes, refusals = _build_checks(layout, settings, build, lock)
    refusals += layout_problems(layout, settings, args.trainer_gpu)
    lines = [f"{PREFIX}: {layout.describe()}"]
    plan, plan_ok = None, True
    try:
        plan = run_plan(layout.plan_args())
    except PreflightError as exc:
        if settings.other_model is None:
            raise
        # Another model's sizes come from its config.json: unreadable here (a folder only vLLM
        # mounts, no network), it is not refused on a guess; vLLM and the run check still apply.
        notes.append(f"HALO_MODEL={settings.other_model} not checked: {exc}")
    if plan is not None:
        verdict = decide(layout, plan, memory_check=settings.memory_check)
        lines += verdict.lines[1:]  # the layout's line is already there
        plan_ok = verdict.ok
        if verdict.ok:  # a refused plan already says what to change; free memory comes after it
            running = args.policy_address if answers(args.policy_address) else None
            in_use = memory_in_use(layout, plan, memory_check=settings.memory_check, stack_running=running)
            notes += in_use[0]
            refusals += in_use[1]
    needs, disk_notes = _disk_needs(settings, plan)
    disk = gpu_disk.check(needs)
    notes += disk_notes + disk[0]
    refusals += disk[1]
    lines += [f"{PREFIX}: {note}" for note in notes]
    lines += [f"{PREFIX}: refusing to start: {why}" for why in refusals]
    return plan_ok and not refusals, lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m halo.cli.gpu_preflight", description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy-gpu", default="0", help="vLLM's card (HALO_POLICY_GPU: an index or a UUID)")
    parser.add_argument(
        "--trainer-gpu", default="0", help="the learner's cards, one rank each (HALO_TRAINER_GPU: e.g. 1 or 1,2)"
    )
    parser.add_argument(
        "--lock", help="the GPU lock the images were built from (default: the checkout's, else the image's)"
    )
    parser.add_argument(
        "--policy-address", help="host:port of the stack's vLLM: when it answers, memory in use is the stack's own"
    )
    args = parser.parse_args(argv)
    try:
        ok, lines = preflight(args)
    except PreflightError as exc:
        sys.stderr.write(f"{PREFIX}: refusing to start: {exc}\n")
        return 2
    stream = sys.stdout if ok else sys.stderr
    stream.write("".join(f"{line}\n" for line in lines))
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
