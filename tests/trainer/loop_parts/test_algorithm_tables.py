"""The algorithm and job-kind tables: every algorithm has a loop, a title, a promotable mode and a
place in the CLI's help; every job kind has a player; and a new entry shows in each place."""

from __future__ import annotations

import inspect
import re
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


# A fresh interpreter where the algorithm enum and its records have one more member, set before the
# consumers are imported: each must follow its record without an edit of its own. The new one trains
# by DPO and shows a figure of its own on the progress line, so both differ from GRPO's record.
NEW_ALGORITHM = """
import enum
from types import SimpleNamespace

import halo.schemas as schemas
import halo.schemas.choices as choices

members = {a.name: a.value for a in choices.Algorithm} | {"GSPO": "gspo"}
New = enum.StrEnum("Algorithm", members)
records = {New(a.value): r for a, r in choices.ALGORITHMS.items()} | {
    New.GSPO: choices.AlgorithmRecord(
        title="group sequence policy optimisation",
        own_section=None,
        trains_by_dpo=True,
        progress=(("clipped", "train/clip_frac", ".2f"),),
    )
}
titles = {a: r.title for a, r in records.items()}
for module in (choices, schemas):
    module.Algorithm, module.ALGORITHMS, module.ALGORITHM_TITLES = New, records, titles

from halo.cli.progress import scores
from halo.cli.train_commands import ALGORITHM_HELP
from halo.modes import MODES
from halo_trainer.checks import memory_plan_cli
from halo_trainer.config import load_defaults, profile_for, resolve
from halo_trainer.learner.memory.plan import workload_for
from halo.settings.trainer import TrainerSettings

assert MODES["qwen3vl_gspo"].algorithm == "gspo", list(MODES)
assert "gspo (group sequence policy optimisation)" in ALGORITHM_HELP, ALGORITHM_HELP
run = SimpleNamespace(updates=1, latest_metrics={"train/clip_frac": 0.25}, spec=SimpleNamespace(algorithm="gspo"))
assert scores(run) == "clipped 0.25", scores(run)
settings = TrainerSettings(target="gpu")
grpo = resolve(schemas.RunSpec(domain="plan"), "plan", ["plan"], load_defaults(settings.rl_config), profile_for("gpu"))
gspo = grpo.model_copy(update={"algorithm": "gspo"})
learner = grpo.learner_config(settings.resolved_learner())
assert not workload_for(grpo, learner, "bfloat16").dpo and workload_for(gspo, learner, "bfloat16").dpo
import contextlib, io
err = io.StringIO()
with contextlib.redirect_stderr(err):
    try:
        memory_plan_cli.main(["--algorithm", "nonesuch"])
    except SystemExit:
        pass
assert "'gspo'" in err.getvalue(), err.getvalue()
print("ok")
"""


def test_a_new_algorithm_record_is_followed_by_every_consumer() -> None:
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


# An algorithm told apart by its name, outside its record (halo.schemas.choices.ALGORITHMS), the
# loop table and the run config's field of its own section: a consumer a new algorithm would miss.
BY_NAME = re.compile(
    r"""(==|!=|\bis|\bis not)\s*(Algorithm\.[A-Z]+\b|["'](grpo|mcts)["'])"""
    r"""|(Algorithm\.[A-Z]+|["'](grpo|mcts)["'])\s*(==|!=)"""
    r"""|choices=\[["'](grpo|mcts)["']"""
)
RECORD_HOMES = {"shared/halo/schemas/choices.py", "services/trainer/halo_trainer/loops.py"}


def _told_by_name(path: Path, source: str) -> list[str]:
    return [f"{path}:{n}: {line.strip()}" for n, line in enumerate(source.splitlines(), 1) if BY_NAME.search(line)]


def test_no_consumer_tells_an_algorithm_by_its_name() -> None:
    found = [
        hit
        for top in ("shared", "services", "scripts")
        for path in sorted((ROOT / top).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in RECORD_HOMES
        for hit in _told_by_name(path.relative_to(ROOT), path.read_text(encoding="utf-8"))
        if 'own_section == "mcts"' not in hit  # the run config's typed field of that section
    ]
    assert not found


def test_the_name_check_finds_the_forms_the_record_replaced() -> None:
    replaced = (
        'if run.spec.algorithm.value == "mcts":\n'
        'dpo=str(getattr(run.algorithm, "value", run.algorithm)) == "mcts",\n'
        'parser.add_argument("--algorithm", choices=["grpo", "mcts"], default="grpo")\n'
        "if given and self.algorithm is not Algorithm.MCTS:\n"
        "ok = ALGORITHMS[run.algorithm].trains_by_dpo\n"
    )
    assert len(_told_by_name(Path("x.py"), replaced)) == 4
