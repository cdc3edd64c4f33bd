"""vLLM's one spurious traceback at a clean stop, told in one line instead.

When vLLM's API server is asked to stop, ``AsyncLLM.shutdown`` tears the engine client down before
it cancels its output handler; the client's socket task, cancelled, hands the handler an
``EngineDeadError`` to wake its waiters, and a handler still running logs
"AsyncLLM output_handler failed." with the whole traceback, though the stop goes on and ends
cleanly (vllm-project/vllm#48745, fixed by a flag in AsyncLLM in vllm-project/vllm#49000, not in
the vLLM this project locks). Whether it is logged is a race between two cancellations, so it
appears at some stops and not others.

``StopRace`` sits between vLLM's output and the service's log. Only after the service asked vLLM
to stop, a record that starts "AsyncLLM output_handler failed." is held back: vLLM prints each
line of a multi-line record behind the record's own header (process, level, time, file), so the
record is the run of lines with that header. If it ends in ``EngineDeadError`` it becomes one line
saying so; anything else (a real failure while stopping) is written as vLLM wrote it.
"""

from __future__ import annotations

from collections.abc import Callable

MARK = "AsyncLLM output_handler failed."
NOTE = (
    "halo_policy: vLLM logged EngineDeadError from its output handler while stopping "
    "(a known race of its shutdown, vllm-project/vllm#48745); the stop went on\n"
)


class StopRace:
    def __init__(self, stopping: Callable[[], bool]) -> None:
        self.stopping = stopping
        self.header: str | None = None  # the held record's header, while one is held
        self.held: list[str] = []

    def feed(self, line: str) -> list[str]:
        """The lines to write now for one line of vLLM's output."""
        if self.header is not None:
            if line.startswith(self.header):
                self.held.append(line)
                return []
            return [*self.flush(), *self.feed(line)]
        if self.stopping() and (at := line.find(MARK)) > 0:
            self.header, self.held = line[:at], [line]
            return []
        return [line]

    def flush(self) -> list[str]:
        """The held record, as one line when it is the race's, else as it was; nothing when none is held."""
        held, header, self.header, self.held = self.held, self.header, None, []
        if not held:
            return []
        said = [text for line in held if (text := line[len(header) :].strip())]
        return [NOTE] if said and "EngineDeadError" in said[-1] else held
