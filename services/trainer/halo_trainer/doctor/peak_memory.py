"""The learner's peak memory in this process, as the memory plan counts it: on a CUDA device what
torch's allocator held at most (``max_memory_allocated``: the learner is the only user of the card in
this process); on the CPU the growth of the resident set (Linux's ``VmHWM`` high-water mark, reset
through ``/proc/self/clear_refs``) over what the process held before the learner was built."""

from __future__ import annotations

from pathlib import Path

GIB = 2**30


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)


class PeakMemory:
    """``start()`` before the learner is built, ``reset()`` before the update, ``peak_gib()`` after it."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self.device = device
        self._before_kib = 0

    @property
    def what(self) -> str:
        return "torch.cuda.max_memory_allocated" if self.cuda else "resident set growth (VmHWM)"

    def start(self) -> None:
        if not self.cuda:
            self._before_kib = _status_kib("VmRSS")

    def reset(self) -> None:
        """Forget the peaks before now (the model's load set higher marks than an update would)."""
        if self.cuda:
            import torch

            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            Path("/proc/self/clear_refs").write_text("5")

    def peak_gib(self) -> float:
        if self.cuda:
            import torch

            return torch.cuda.max_memory_allocated(self.device) / GIB
        return (_status_kib("VmHWM") - self._before_kib) * 1024 / GIB
