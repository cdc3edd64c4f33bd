"""The phase a run's loop is in (``RunPhase``), reported through the run's status.

The loop says where it is (``enter``), counts the phase's work (``advance``) and says why it is slow
when it knows (``note``: vLLM not ready, a job reclaimed); the places that wait (the pipeline's
receive loops) call ``tick`` each time round, which reports at most once per ``min_interval_s``. A
phase change is reported at once. Reports are throttled because each one is an event of the run: the
viewer listens to them, and one per received episode would be noise.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from halo.schemas import RunPhase

Report = Callable[[], Awaitable[None]]


class Progress:
    def __init__(self, report: Report | None = None, min_interval_s: float = 1.0) -> None:
        self._report = report
        self.min_interval_s = min_interval_s
        self.phase: RunPhase | None = None
        self._dirty = False
        self._last_report = 0.0

    async def enter(self, kind: str, label: str, *, total: int | None = None, unit: str = "") -> None:
        """Begin a phase and report it now."""
        self.phase = RunPhase(kind=kind, label=label, total=total, unit=unit, started_at=time.time())
        await self.tick(force=True)

    def advance(self, done: int, total: int | None = None) -> None:
        """The phase's work so far (reported at the next ``tick``)."""
        if self.phase is not None and (done != self.phase.done or (total is not None and total != self.phase.total)):
            self.phase.done = done
            if total is not None:
                self.phase.total = total
            self._dirty = True

    def note(self, text: str | None) -> None:
        """Why the phase is slower than it should be, or None once it is not (reported at the next ``tick``)."""
        if self.phase is not None and text != self.phase.note:
            self.phase.note = text[:500] if text else None
            self._dirty = True

    async def tick(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if self._report is None or not (force or (self._dirty and now - self._last_report >= self.min_interval_s)):
            return
        self._dirty, self._last_report = False, now
        await self._report()
