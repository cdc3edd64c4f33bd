"""vLLM's spurious EngineDeadError at a clean stop becomes one line; nothing else is held back."""

from __future__ import annotations

from pathlib import Path

from halo_policy.stop_race import NOTE, StopRace

HEAD = "(APIServer pid=4242) ERROR 12-02 10:11:04 [async_llm.py:906] "
RACE = [
    f"{HEAD}AsyncLLM output_handler failed.\r\n",
    f"{HEAD}Traceback (most recent call last):\r\n",
    f'{HEAD}  File "/venv/vllm/v1/engine/async_llm.py", line 850, in output_handler\r\n',
    f"{HEAD}    outputs = await engine_core.get_output_async()\r\n",
    f"{HEAD}vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n",
]
AFTER = "(APIServer pid=4242) INFO 12-02 10:11:05 [launcher.py:110] Shutting down FastAPI HTTP server.\n"


def _through(race: StopRace, lines: list[str]) -> list[str]:
    out = [written for line in lines for written in race.feed(line)]
    return out + race.flush()


def test_the_race_while_stopping_is_one_line_and_the_lines_after_it_pass() -> None:
    assert _through(StopRace(lambda: True), [*RACE, AFTER]) == [NOTE, AFTER]
    assert _through(StopRace(lambda: True), RACE) == [NOTE]  # the output ends with the record


def test_the_same_record_before_a_stop_is_a_real_failure_and_kept() -> None:
    assert _through(StopRace(lambda: False), [*RACE, AFTER]) == [*RACE, AFTER]


def test_another_error_in_the_output_handler_while_stopping_is_kept() -> None:
    other = [*RACE[:-1], f"{HEAD}RuntimeError: CUDA error: an illegal memory access was encountered\n"]
    assert _through(StopRace(lambda: True), [*other, AFTER]) == [*other, AFTER]


def test_the_record_vllm_wrote_at_a_real_stop_is_one_line() -> None:
    """vLLM 0.32's own output at a stop of the embedded stack (the venv's path shortened)."""
    lines = (Path(__file__).parent / "data" / "vllm_stop_race.log").read_text().splitlines(keepends=True)
    out = _through(StopRace(lambda: True), lines)
    assert NOTE in out and not any("Traceback" in line or "EngineDeadError" in line for line in out if line != NOTE)
    assert out[0] == lines[0] and out[-1] == lines[-1]  # the lines around the record pass as they were
