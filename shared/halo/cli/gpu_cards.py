"""The cards as nvidia-smi reports them, in one call: what the GPU pre-flight reads (halo.cli.gpu_preflight).

One query gives every field a check needs: the driver, each card's compute capability and its memory
(total, used, free). When nvidia-smi cannot answer, its own message is turned into the fix: inside the
pre-flight's container a missing nvidia-smi or "No devices were found" means Docker's NVIDIA runtime
gave the container no card, which no setting of this project can repair.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

QUERY_FIELDS = (
    "index",
    "uuid",
    "name",
    "driver_version",
    "compute_cap",
    "memory.total",
    "memory.used",
    "memory.free",
)
NVIDIA_SMI = ["nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits"]
MIB_PER_GIB = 1024
# What the host and Docker must have for a container to see a card (docs/compose.md, "On a GPU box").
RUNTIME_FIX = (
    "install the NVIDIA Container Toolkit (nvidia-container-toolkit) on the host, run `sudo nvidia-ctk runtime "
    "configure --runtime=docker && sudo systemctl restart docker`, and check that `docker run --rm --gpus all "
    "halo-gpu-base nvidia-smi` lists the cards; or run the CPU target (HALO_TARGET=cpu)"
)


class PreflightError(Exception):
    """The cards cannot be read or the layout names a card that is not there: one line for the user."""


@dataclass(frozen=True)
class GpuCard:
    index: str
    uuid: str
    name: str
    total_mib: float
    used_mib: float
    free_mib: float | None = None  # None: "[N/A]" (some virtualised cards)
    driver: str = ""
    compute_cap: tuple[int, int] | None = None  # None: "[N/A]"

    @property
    def total_gib(self) -> float:
        return self.total_mib / MIB_PER_GIB

    @property
    def used_gib(self) -> float:
        return self.used_mib / MIB_PER_GIB

    @property
    def free_gib(self) -> float | None:
        return None if self.free_mib is None else self.free_mib / MIB_PER_GIB

    def label(self) -> str:
        return f"card {self.index} ({self.name}, {self.total_gib:.1f} GiB)"


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def _capability(text: str) -> tuple[int, int] | None:
    major, dot, minor = text.partition(".")
    if not dot or not major.isdigit() or not minor.isdigit():
        return None
    return int(major), int(minor)


def parse_cards(text: str) -> list[GpuCard]:
    """nvidia-smi's CSV rows (``NVIDIA_SMI``'s fields, no header, no units) as cards."""
    cards = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(QUERY_FIELDS):
            raise PreflightError(f"nvidia-smi printed {line!r}, not the {len(QUERY_FIELDS)} fields {QUERY_FIELDS}")
        index, uuid, name, driver, capability, total, used, free = fields
        total_mib = _number(total)
        if total_mib is None:
            raise PreflightError(f"nvidia-smi reports no memory total for card {index} ({name}): {total!r}")
        cards.append(
            GpuCard(index, uuid, name, total_mib, _number(used) or 0.0, _number(free), driver, _capability(capability))
        )
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


def pick_list(cards: Sequence[GpuCard], wanted: str, setting: str) -> tuple[GpuCard, ...]:
    """The cards a comma-separated list names (``HALO_TRAINER_GPU=1,2``: one learner rank on each)."""
    items = [item.strip() for item in wanted.split(",") if item.strip()]
    if len(items) == 1:
        return (pick(cards, items[0], setting),)
    if not items:
        raise PreflightError(f"{setting}={wanted!r} names no card: give an index or a UUID, or a list such as 1,2")
    known = {key: card for card in cards for key in (card.index, card.uuid)}
    if missing := [item for item in items if item not in known]:
        visible = ", ".join(f"{c.index} ({c.name})" for c in cards)
        raise PreflightError(
            f"{setting}={wanted}: {', '.join(missing)} names no card of this machine; its cards: {visible}"
        )
    chosen = tuple(known[item] for item in items)
    if len({card.index for card in chosen}) != len(chosen):
        raise PreflightError(f"{setting}={wanted} names a card twice: one learner rank a card")
    return chosen


# nvidia-smi's own words -> why, and the fix (first match wins).
FAILURES = (
    (
        "No devices were found",
        f"nvidia-smi runs here but lists no card: Docker's NVIDIA runtime passed none. Fix: {RUNTIME_FIX}",
    ),
    (
        "couldn't communicate with the NVIDIA driver",
        "the NVIDIA driver is not loaded on the host. Fix: install the driver (and reboot) until `nvidia-smi` "
        "on the host lists the cards",
    ),
    (
        "Driver/library version mismatch",
        "the host's NVIDIA driver was updated without a reboot (its kernel module is the old one). Fix: reboot the host",
    ),
    (
        "Failed to initialize NVML: Unknown Error",
        "this container lost its access to the cards (a `systemctl daemon-reload` on the host drops it with "
        "systemd's cgroup driver). Fix: restart the stack (make down, make up); see the NVIDIA Container "
        "Toolkit's troubleshooting if it recurs",
    ),
)


def explain_failure(said: str, returncode: int, driver_hint: str) -> str:
    """One line for a failed nvidia-smi call, from what it printed."""
    for words, why in FAILURES:
        if words in said:
            return why
    if "is not a valid field to query" in said:
        # compute_cap came with the R510 drivers; an older nvidia-smi knows fewer fields.
        return f"this driver's nvidia-smi is too old for the query ({said.strip().splitlines()[0]}). Fix: {driver_hint}"
    lines = said.strip().splitlines()
    return f"nvidia-smi failed (exit {returncode}): {lines[-1] if lines else 'no output'}"


def read_cards(driver_hint: str) -> list[GpuCard]:
    """The machine's cards, or why Docker or the driver gives none (``driver_hint``: how to update the driver)."""
    if shutil.which(NVIDIA_SMI[0]) is None:
        raise PreflightError(
            f"nvidia-smi is not in this container: Docker's NVIDIA runtime gave it no card. Fix: {RUNTIME_FIX}"
        )
    try:
        done = subprocess.run(NVIDIA_SMI, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise PreflightError("nvidia-smi did not answer in 60 s (the driver is stuck): reboot the host") from None
    said = f"{done.stdout}\n{done.stderr}"
    if done.returncode != 0 or any(words in said for words, _ in FAILURES):
        raise PreflightError(explain_failure(said, done.returncode, driver_hint))
    return parse_cards(done.stdout)
