"""`halo train --help` at 80 columns: the common options only, each default as a run on this stack
gets it with the profile named, every domain of the task registry; `--help-all` for the rest, in
panels; switches spelled once. Nothing is submitted: parsing is checked on the command itself."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache

import pytest
import typer

from halo import run_defaults
from halo.cli import main as cli
from halo.cli.train_help import COMMON_KNOBS
from halo.schemas import knobs, rl_config_file
from halo_sites.tasks import load_tasks

TINY = (("COLUMNS", "80"), ("HALO_TRAINER_TARGET", "cpu"))


@cache
def _help(args: tuple[str, ...], env: tuple[tuple[str, str], ...]) -> list[str]:
    # The command as a user runs it, in a process of its own: typer fixes its help's width once a
    # process first renders help, which another test may have done at another width.
    result = subprocess.run(
        [sys.executable, "-m", "halo.cli.main", "train", *args],
        env={k: v for k, v in os.environ.items() if k not in ("TERMINAL_WIDTH", "HALO_TRAINER_TARGET")} | dict(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def help_text(*args: str, env: tuple[tuple[str, str], ...] = TINY) -> list[str]:
    return _help(args, env)


def default_on(target: str, name: str) -> str:
    values = run_defaults.resolved_values(
        {}, run_defaults.load_defaults("configs/rl_config.yaml"), run_defaults.profile_for(target)
    )
    return rl_config_file.inline(values[name])


def test_help_fits_80_columns_with_the_common_options_and_the_stacks_defaults() -> None:
    lines = help_text("--help")
    text = "\n".join(lines)
    assert len(lines) < 80, len(lines)
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text  # nothing cut to fit
    assert "Defaults: profile tiny (embedded stack" in text
    assert "--help-all" in text and "--no-no-" not in text
    for name in COMMON_KNOBS:
        assert knobs.BY_NAME[name].flag in text, name
    assert "--kl-coef" not in text and "--simulations" not in text  # behind --help-all
    # --lr as the run will use it here: the tiny profile's 0.01, not the table's 1e-6
    lr = next(i for i, line in enumerate(lines) if "--learning-rate" in line)
    assert default_on("cpu", "learning_rate") == "0.01"
    assert "(default 0.01)" in " ".join(" ".join(lines[lr : lr + 4]).replace("│", " ").split())


def test_help_names_every_domain_of_the_task_registry() -> None:
    text = " ".join(" ".join(help_text("--help")).replace("│", " ").split())
    domains = sorted({t.domain for t in load_tasks()})
    assert len(domains) == 12
    assert "Site: " + ", ".join(domains) in text


def test_help_on_the_gpu_target_says_no_profile_and_the_tables_defaults() -> None:
    text = " ".join(
        " ".join(help_text("--help", env=(("COLUMNS", "80"), ("HALO_TRAINER_TARGET", "gpu")))).replace("│", " ").split()
    )
    assert "Defaults: no profile (gpu target)" in text
    assert f"(default {default_on('gpu', 'learning_rate')})" in text and default_on("gpu", "learning_rate") != "0.01"


def test_help_with_invalid_trainer_settings_still_shows_and_says_so() -> None:
    lines = help_text("--help", env=(("COLUMNS", "80"), ("HALO_TRAINER_TARGET", "tpu")))
    text = " ".join(" ".join(lines).split())
    assert "Defaults: as declared; the trainer's settings are invalid" in text and "target" in text
    assert "Traceback" not in text


def test_help_all_shows_every_option_in_panels_at_80_columns() -> None:
    lines = help_text("--help-all")
    text = "\n".join(lines)
    assert max(len(line) for line in lines) <= 80 and "…" not in text
    for title in ("Options", "Run", "GRPO (--algorithm grpo)", "Search (--algorithm mcts)"):
        assert f"╭─ {title} ─" in text, title
    flat = " ".join(text.replace("│", " ").split())
    for k in knobs.KNOBS:
        if k.request:
            assert k.flag in flat, k.name
    assert "off: --no-describe-tools" in flat and "--no-no-" not in flat


def _parse(*args: str) -> dict:
    command = typer.main.get_command(cli.app).commands["train"]
    return command.make_context("train", list(args)).params


def test_switches_are_spelled_once_and_knob_switches_turn_off() -> None:
    params = _parse("--domain", "playground", "--no-stack", "--detach", "--no-describe-tools", "--lr", "0.003")
    assert params["no_stack"] is True and params["detach"] is True
    assert params["describe_tools"] is False and params["learning_rate"] == 0.003
    for wrong in ("--no-no-stack", "--no-detach"):
        with pytest.raises(Exception, match="No such option"):
            _parse("--domain", "playground", wrong)
