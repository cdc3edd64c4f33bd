"""What the images' CUDA build asks of a card: the driver it needs and the compute capabilities it runs on.

Both follow from the GPU lock (requirements/gpu-lock.txt, installed at /opt/halo/gpu-lock.txt in the
images): its CUDA runtime (``nvidia-cuda-runtime==13.0.96``, or torch's ``+cu130``) names the CUDA
release, and NVIDIA's tables give the rest. Read from the lock, not written here as a constant, so a
lock that moves to another CUDA moves the requirement with it; a CUDA the tables lack is named, not
guessed (tests/shared/test_gpu_preflight.py fails on the shipped lock until the tables cover it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from halo.cli.gpu_cards import GpuCard

# The checkout's lock, then the images' copy (Dockerfile.gpu-base): the first that exists is read.
LOCK_PATHS = (Path(__file__).resolve().parents[3] / "requirements" / "gpu-lock.txt", Path("/opt/halo/gpu-lock.txt"))

# NVIDIA's minimum Linux x86_64 driver for each CUDA toolkit's GA release (the CUDA Toolkit release
# notes, "CUDA Toolkit and Corresponding Driver Versions"). A later update of the same CUDA runs on it
# too (CUDA's minor version compatibility within a major release).
MIN_DRIVER = {
    (11, 8): "520.61.05",
    (12, 0): "525.60.13",
    (12, 1): "530.30.02",
    (12, 2): "535.54.03",
    (12, 3): "545.23.06",
    (12, 4): "550.54.14",
    (12, 5): "555.42.02",
    (12, 6): "560.28.03",
    (12, 8): "570.26",
    (12, 9): "575.51.03",
    (13, 0): "580.65.06",
}

# The GPU architectures PyTorch's wheels for each CUDA carry kernels for (``torch.cuda.get_arch_list()``
# of the wheel; 13.0: torch 2.13.0+cu130, the lock's). A card runs a kernel built for its own major
# version and an equal or lower minor one (sm_86 runs on 8.9, sm_90 not on 10.0). CUDA 13.0 itself
# dropped the cards before Turing (7.5), so the V100 (7.0) is refused whatever torch carries.
TORCH_ARCHES = {
    (13, 0): ((7, 5), (8, 0), (8, 6), (9, 0), (10, 0), (12, 0)),
}
BF16_CAPABILITY = (8, 0)  # bfloat16 arithmetic: Ampere (A100, A10G, RTX 30xx) and newer; a T4 (7.5) has none
BF16_CARDS = "A100, A10G, L4, L40S, RTX 3090/4090, H100"

_RUNTIME = re.compile(r"^nvidia-cuda-runtime(?:-cu\d+)?==(\d+)\.(\d+)\S*", re.MULTILINE)
_TORCH = re.compile(r"^torch==[^\s+]+\+cu(\d+)(\d)\b\S*", re.MULTILINE)


@dataclass(frozen=True)
class CudaBuild:
    cuda: tuple[int, int]
    source: str  # the lock's line it was read from

    @property
    def name(self) -> str:
        return f"CUDA {self.cuda[0]}.{self.cuda[1]}"

    @property
    def min_driver(self) -> str | None:
        return MIN_DRIVER.get(self.cuda)

    @property
    def arches(self) -> tuple[tuple[int, int], ...] | None:
        return TORCH_ARCHES.get(self.cuda)

    def driver_fix(self) -> str:
        least = self.min_driver or f"the one NVIDIA lists for {self.name}"
        return f"update the host's NVIDIA driver to {least} or newer, or use a machine image with driver >= {least}"


def find_lock(paths: Iterable[Path] = LOCK_PATHS) -> Path | None:
    return next((p for p in paths if p.is_file()), None)


def read_build(lock: Path) -> CudaBuild | None:
    """The CUDA release the lock's torch and vLLM are built for (the newest runtime when it holds two)."""
    text = lock.read_text()
    found = [((int(a), int(b)), m.group(0)) for m in _RUNTIME.finditer(text) for a, b in [m.groups()]]
    found += [((int(a), int(b)), m.group(0)) for m in _TORCH.finditer(text) for a, b in [m.groups()]]
    if not found:
        return None
    cuda, source = max(found)
    return CudaBuild(cuda, source)


def _version(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def driver_problem(cards: Sequence[GpuCard], build: CudaBuild) -> str | None:
    """Why the host's driver cannot run the lock's CUDA, or None (one driver serves every card)."""
    least = build.min_driver
    driver = next((c.driver for c in cards if c.driver), "")
    found, need = _version(driver), _version(least or "")
    if found is None or need is None or found >= need:
        return None
    return (
        f"the NVIDIA driver is {driver}, but the images' {build.name} build (requirements/gpu-lock.txt: "
        f"{build.source}) needs {least} or newer. Fix: {build.driver_fix()}"
    )


def runs_on(capability: tuple[int, int], arches: Sequence[tuple[int, int]]) -> bool:
    return any(major == capability[0] and minor <= capability[1] for major, minor in arches)


def capability_problems(roles: Sequence[tuple[str, GpuCard, str]], build: CudaBuild) -> list[str]:
    """Why a card cannot run its service: ``roles`` are (who, card, dtype), e.g. ("vLLM", card 0, "bfloat16")."""
    problems = []
    for who, card, dtype in roles:
        if card.compute_cap is None:
            continue
        cap = ".".join(map(str, card.compute_cap))
        arches = build.arches
        if arches is not None and not runs_on(card.compute_cap, arches):
            listed = ", ".join(f"{a}.{b}" for a, b in arches)
            problems.append(
                f"{card.label()} has compute capability {cap}, which the images' {build.name} build of torch and "
                f"vLLM has no kernels for (it runs on {listed} and the same major's later ones). Fix: put {who} on "
                f"a card of compute capability {arches[0][0]}.{arches[0][1]} or newer"
            )
        elif dtype == "bfloat16" and card.compute_cap < BF16_CAPABILITY:
            problems.append(
                f"{card.label()} has compute capability {cap}, but {who} runs in bfloat16, which needs 8.0 or newer. "
                f"Fix: put {who} on such a card ({BF16_CARDS})"
            )
    return problems
