"""The GPU pre-flight: read the cards' memory before vLLM starts and refuse a layout that cannot run.

On a card below ~45 GB vLLM cannot hold the 8B in its 0.45 share: without this step the policy
container restarted in a loop, `make up` waited 30 minutes calling it pending, and the trainer, whose
memory check says why, never started. Compose runs this once (the one-shot `preflight` service, which
the policy waits for) and `make up` runs it first, so the refusal comes in seconds, in one line.

The numbers are the memory plan's (`halo memory-plan`, the trainer's): this module only reads the
cards with nvidia-smi, asks the plan about them, and words its verdict. It runs as
``python -m halo.cli.gpu_preflight --policy-gpu 0 --trainer-gpu 0`` in the trainer's image, whose
environment (the stack's env file) holds every setting the plan reads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

QUERY_FIELDS = ("index", "uuid", "name", "memory.total", "memory.used")
NVIDIA_SMI = ["nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits"]
MIB_PER_GIB = 1024
# Memory another process already holds on a card before the stack starts, worth a note (GiB).
BUSY_GIB = 1.0
DOCS = 'docs/compose.md, "Supported GPU layouts"'
PREFIX = "gpu pre-flight"


class PreflightError(Exception):
    """The cards cannot be read or the layout names a card that is not there: one line for the user."""


@dataclass(frozen=True)
class GpuCard:
    index: str
    uuid: str
    name: str
    total_mib: float
    used_mib: float

    @property
    def total_gib(self) -> float:
        return self.total_mib / MIB_PER_GIB

    @property
    def used_gib(self) -> float:
        return self.used_mib / MIB_PER_GIB

    def label(self) -> str:
        return f"card {self.index} ({self.name}, {self.total_gib:.1f} GiB)"


def parse_cards(text: str) -> list[GpuCard]:
    """nvidia-smi's CSV rows (``NVIDIA_SMI``'s fields, no header, no units) as cards."""
    cards = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(QUERY_FIELDS):
            raise PreflightError(f"nvidia-smi printed {line!r}, not the {len(QUERY_FIELDS)} fields {QUERY_FIELDS}")
        index, uuid, name, total, used = fields
        try:
            total_mib = float(total)
        except ValueError:
            raise PreflightError(f"nvidia-smi reports no memory total for card {index} ({name}): {total!r}") from None
        try:
            used_mib = float(used)
        except ValueError:
            used_mib = 0.0  # "[N/A]" on some virtualised cards: the note about busy cards is skipped
        cards.append(GpuCard(index, uuid, name, total_mib, used_mib))
    if not cards:
        raise PreflightError("nvidia-smi lists no card")
    return cards


def pick(cards: Sequence[GpuCard], wanted: str, setting: str) -> GpuCard:
    """The card Compose gives a service (``device_ids``: an index or a UUID)."""
    for card in cards:
        if wanted in (card.index, card.uuid):
            return card
    visible = ", ".join(f"{c.index} ({c.name})" for c in cards)
    raise PreflightError(f"{setting}={wanted} names no card of this machine; its cards: {visible}")


@dataclass(frozen=True)
class Layout:
    """Where vLLM and the learner run, and vLLM's share of its card."""

    policy: GpuCard
    learner: GpuCard
    utilization: float
    model: str | None = None  # HALO_MODEL when it is not the 8B the plan knows by heart

    @property
    def shares_card(self) -> bool:
        return self.policy.index == self.learner.index

    def plan_args(self) -> list[str]:
        """`halo memory-plan` arguments for this layout. Two cards of different sizes are planned as two
        of the smaller (the plan takes one size): a stricter check, never a looser one."""
        gib = min(self.policy.total_gib, self.learner.total_gib)
        args = ["--card-gib", f"{gib:.2f}", "--gpu-memory-utilization", f"{self.utilization:.2f}"]
        if self.model:
            args += ["--model", self.model]
        return args if self.shares_card else [*args, "--two-cards"]

    def describe(self) -> str:
        if self.shares_card:
            return f"vLLM ({self.utilization:.2f} of it) and the learner share {self.policy.label()}"
        return f"vLLM ({self.utilization:.2f} of it) on {self.policy.label()}, the learner on {self.learner.label()}"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    lines: list[str]


def decide(layout: Layout, plan: dict[str, Any], *, memory_check: bool = True) -> Verdict:
    """The pre-flight's answer from the memory plan's JSON (``halo memory-plan --json``): vLLM's share
    must hold vLLM (or it cannot start at all); the learner must fit unless its memory check is off."""
    lines = [f"{PREFIX}: {layout.describe()}"]
    for card in {layout.policy.index: layout.policy, layout.learner.index: layout.learner}.values():
        if card.used_gib >= BUSY_GIB:
            lines.append(f"{PREFIX}: note: {card.used_gib:.1f} GiB of card {card.index} are in use already")
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


def read_cards() -> list[GpuCard]:
    if shutil.which(NVIDIA_SMI[0]) is None:
        raise PreflightError(
            "nvidia-smi is not in this container: Docker gave it no NVIDIA card (install the NVIDIA "
            "Container Toolkit and restart Docker, docs/compose.md), or run the CPU target (HALO_TARGET=cpu)"
        )
    try:
        done = subprocess.run(NVIDIA_SMI, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise PreflightError("nvidia-smi did not answer in 60 s (the driver is stuck)") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise PreflightError(f"nvidia-smi failed (exit {done.returncode}): {said[-1] if said else 'no output'}")
    return parse_cards(done.stdout)


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
    model: str | None  # a model other than the 8B


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
    model = trainer.model if trainer.model not in (None, "", GPU_DEFAULT_MODEL) else None
    return Settings(
        trainer.target, policy.gpu_memory_utilization, trainer.memory_check, trainer.policy_shares_card, model
    )


def check_cards_agree(layout: Layout, policy_shares_card: bool) -> None:
    """The trainer's belief about the card (its memory plan counts the whole card when vLLM is
    elsewhere) against the cards Compose gives: the two-card file without HALO_TRAINER_GPU=1 puts
    vLLM's 0.90 share and the learner on one card."""
    if layout.shares_card and not policy_shares_card:
        raise PreflightError(
            f"HALO_TRAINER_POLICY_SHARES_CARD=false (docker-compose.two-gpu.yml) but vLLM and the learner are "
            f"both on card {layout.policy.index}: set HALO_TRAINER_GPU=1 for two cards, or drop "
            "docker-compose.two-gpu.yml for one"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m halo.cli.gpu_preflight", description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy-gpu", default="0", help="vLLM's card (HALO_POLICY_GPU: an index or a UUID)")
    parser.add_argument("--trainer-gpu", default="0", help="the learner's card (HALO_TRAINER_GPU)")
    args = parser.parse_args(argv)
    try:
        settings = _settings()
        if settings.target != "gpu":
            sys.stdout.write(f"{PREFIX}: the {settings.target} target uses no card: nothing to check\n")
            return 0
        cards = read_cards()
        model = settings.model
        layout = Layout(
            pick(cards, args.policy_gpu, "HALO_POLICY_GPU"),
            pick(cards, args.trainer_gpu, "HALO_TRAINER_GPU"),
            settings.utilization,
            model,
        )
        check_cards_agree(layout, settings.policy_shares_card)
        try:
            plan = run_plan(layout.plan_args())
        except PreflightError as exc:
            if model is None:
                raise
            # Another model's sizes come from its config.json: unreadable here (a folder only vLLM
            # mounts, no network), it is not refused on a guess; vLLM and the run check still apply.
            sys.stdout.write(f"{PREFIX}: {layout.describe()}; HALO_MODEL={model} not checked: {exc}\n")
            return 0
        verdict = decide(layout, plan, memory_check=settings.memory_check)
    except PreflightError as exc:
        sys.stderr.write(f"{PREFIX}: refusing to start: {exc}\n")
        return 2
    stream = sys.stdout if verdict.ok else sys.stderr
    stream.write("".join(f"{line}\n" for line in verdict.lines))
    return 0 if verdict.ok else 2


if __name__ == "__main__":
    sys.exit(main())
