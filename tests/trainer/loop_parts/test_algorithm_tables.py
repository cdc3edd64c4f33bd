"""The algorithm and job-kind tables: every algorithm has a loop, a title, a promotable mode and a
place in the CLI's help; every job kind has a player; and a new entry shows in each place."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from halo.cli.train_commands import ALGORITHM_HELP
from halo.modes import MODES
from halo.schemas import ALGORITHM_TITLES, Algorithm
from halo_trainer import worker
from halo_trainer.api import runs
from halo_trainer.api.promotion import mode_for
from halo_trainer.loops import LOOPS

ROOT = Path(__file__).resolve().parents[3]


def test_every_algorithm_has_a_loop_and_a_title() -> None:
    assert set(LOOPS) == set(Algorithm) == set(ALGORITHM_TITLES)


@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_each_loop_fits_the_loop_protocol(algorithm: Algorithm) -> None:
    loop = LOOPS[algorithm]
    assert inspect.iscoroutinefunction(loop.run) and inspect.iscoroutinefunction(loop.release_weights)
    assert callable(loop.status) and not inspect.iscoroutinefunction(loop.status)
    assert list(inspect.signature(loop.__init__).parameters)[:2] == ["self", "cfg"]


@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_each_algorithm_has_a_promotable_mode_and_a_line_of_cli_help(algorithm: Algorithm) -> None:
    mode = mode_for(algorithm.value)
    assert mode is not None and MODES[mode].algorithm == algorithm.value and MODES[mode].adapter_dir_name
    assert f"{algorithm.value} ({ALGORITHM_TITLES[algorithm]})" in ALGORITHM_HELP


def test_the_run_manager_takes_its_loop_from_the_table(monkeypatch) -> None:
    class Recorder:
        """Any class in the table is what a run of its algorithm gets."""

    monkeypatch.setitem(LOOPS, Algorithm.GRPO, Recorder)
    assert runs.loop_class(Algorithm.GRPO) is Recorder
    assert runs.loop_class(Algorithm.MCTS) is LOOPS[Algorithm.MCTS]


# A fresh interpreter where the algorithm enum and its titles have one more member, set before the
# modes and the CLI are imported: both must show it without an edit of theirs.
NEW_ALGORITHM = """
import enum
import halo.schemas as schemas
import halo.schemas.choices as choices

members = {a.name: a.value for a in choices.Algorithm} | {"GSPO": "gspo"}
New = enum.StrEnum("Algorithm", members)
titles = {New(a.value): t for a, t in choices.ALGORITHM_TITLES.items()} | {New.GSPO: "group sequence policy optimisation"}
for module in (choices, schemas):
    module.Algorithm, module.ALGORITHM_TITLES = New, titles

from halo.cli.train_commands import ALGORITHM_HELP
from halo.modes import MODES

assert MODES["qwen3vl_gspo"].algorithm == "gspo", list(MODES)
assert "gspo (group sequence policy optimisation)" in ALGORITHM_HELP, ALGORITHM_HELP
print("ok")
"""


def test_a_new_algorithm_shows_in_the_modes_and_the_cli_help() -> None:
    out = subprocess.run([sys.executable, "-c", NEW_ALGORITHM], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_every_job_kind_has_a_player() -> None:
    assert set(worker.PLAYERS) == worker.job_kinds()


async def test_a_job_kind_without_a_player_is_a_clear_error(monkeypatch, tmp_path) -> None:
    from halo.schemas import EvalJob
    from tests.trainer.stand_ins import job_for, services

    monkeypatch.delitem(worker.PLAYERS, EvalJob)
    with pytest.raises(TypeError, match="no player for a job of kind EvalJob"):
        await worker.play(services(), job_for("run-t", kind="eval"), tmp_path)
