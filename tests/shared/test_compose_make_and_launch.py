"""The Makefile's choice of stack (`make train`, `make up`, `make down`) and launch.sh / teardown.sh over it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.shared.compose_stack import ROOT


# --- the Makefile's choice of stack, and launch.sh / teardown.sh -----------------------------------------
def _make(tmp_path: Path, *args: str, env_file: str | None = None) -> subprocess.CompletedProcess[str]:
    """`make -n` (prints, runs nothing) in a clean environment with its own env file."""
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env["ENV_FILE"] = str(tmp_path / "env")
    if env_file is not None:
        (tmp_path / "env").write_text(env_file)
    return subprocess.run(["make", "-s", "-n", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_train_keeps_the_embedded_default_without_a_compose_marker(tmp_path: Path):
    result = _make(tmp_path, "train", "DOMAIN=gomail", env_file="OPENAI_API_KEY=x\n")
    assert result.returncode == 0, result.stderr
    assert "scripts/setup.sh" in result.stdout and ".venv/bin/halo train --domain gomail" in result.stdout
    assert "exec" not in result.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("stack", ["compose", "compose-cpu"])
def test_make_train_runs_the_cli_inside_the_trainer_after_make_up(tmp_path: Path, stack: str):
    result = _make(
        tmp_path,
        "train",
        "DOMAIN=omnizon",
        "EPISODES=3",
        "TASK=v2.omnizon-1 v2.omnizon-2",
        env_file=f"HALO_STACK={stack}\n",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "setup.sh" not in out and ".venv" not in out  # nothing on the host
    assert "trainer is not running: run" in out and "make up" in out  # checked first, never a fallback
    line = next(x for x in out.splitlines() if "trainer halo train" in x)
    assert line.endswith(
        "exec $tty trainer halo train --domain omnizon --episodes 3 --task v2.omnizon-1 --task v2.omnizon-2 --no-stack"
    )
    assert ("scripts/compose_cpu.sh" in line) == (stack == "compose-cpu")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_up_records_the_stack_and_a_bad_stack_is_refused(tmp_path: Path):
    up = _make(tmp_path, "up", env_file="")
    assert up.returncode == 0, up.stderr
    assert "HALO_STACK=compose" in up.stdout and "run --rm model" in up.stdout and "up -d" in up.stdout
    for args, env_file in ((["train", "STACK=gpu"], ""), (["train"], "HALO_STACK=nonsense\n")):
        bad = _make(tmp_path, *args, env_file=env_file)
        assert bad.returncode != 0 and "use one of local compose compose-cpu" in bad.stderr
    local_up = _make(tmp_path, "up", "STACK=local", env_file="")
    assert "STACK=local is the embedded stack" in local_up.stdout  # printed by the recipe, which exits 2


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(
    ("env_file", "args", "expected"),
    [
        ("", [], ".venv/bin/halo stack down"),  # no marker: the embedded default
        ("HALO_STACK=local\n", [], ".venv/bin/halo stack down"),
        ("HALO_STACK=compose\n", [], " down"),
        ("HALO_STACK=compose\n", ["VOLUMES=1"], " down -v"),
        ("HALO_STACK=compose-cpu\n", [], "scripts/compose_cpu.sh down"),
        ("", ["STACK=compose"], " down"),  # the command line overrides .env, as for train
    ],
)
def test_make_down_stops_the_stack_this_checkout_runs(tmp_path: Path, env_file: str, args: list[str], expected: str):
    result = _make(tmp_path, "down", *args, env_file=env_file)
    assert result.returncode == 0, result.stderr
    lines = [x for x in result.stdout.splitlines() if x.strip()]
    embedded = expected.startswith(".venv")
    assert any(expected in x for x in lines), result.stdout
    # Never both: the embedded stack's down does not touch Compose (whose config needs the trainer
    # token .env only has after `make up`), and Compose's down does not touch the local processes.
    assert embedded == ("halo stack down" in result.stdout)
    assert embedded != any(x.rstrip().endswith((" down", " down -v")) and "compose" in x for x in lines)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_stack_down_stays_the_embedded_stack_down(tmp_path: Path):
    for env_file in ("", "HALO_STACK=compose\n"):
        result = _make(tmp_path, "stack-down", env_file=env_file)
        assert result.returncode == 0, result.stderr
        assert ".venv/bin/halo stack down" in result.stdout and "compose" not in result.stdout


def _fake_tools(tmp_path: Path) -> dict[str, str]:
    """A PATH whose `make` records its arguments (one call per line) and whose `docker` exists."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "make").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/make.calls\n')
    (bin_dir / "docker").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "ENV_FILE": str(tmp_path / "env")}


def _script(tmp_path: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    result = subprocess.run(
        ["bash", str(ROOT / name), *args], env=_fake_tools(tmp_path), capture_output=True, text=True, timeout=30
    )
    calls = tmp_path / "make.calls"
    return result, calls.read_text().splitlines() if calls.exists() else []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "unknown argument '--bogus'"),
        (["--episodes"], "--episodes needs a value"),
        (["--episodes", "ten"], "--episodes 'ten': a positive integer"),
        (["--episodes", "0"], "a positive integer"),
        (["--task", "--episodes", "3"], "--task needs a value"),
        (["--task", "v2.omnizon-1;rm"], "a task id such as v2.omnizon-1"),
        (["--domain", "Omnizon!"], "a site name"),
        (["--stack", "gpu"], "compose or compose-cpu"),
        (["extra"], "unknown argument 'extra'"),
    ],
)
def test_launch_sh_refuses_bad_flags_with_a_usage_message(tmp_path: Path, args: list[str], message: str):
    result, calls = _script(tmp_path, "launch.sh", *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Usage: ./launch.sh" in result.stderr
    assert calls == []  # nothing started


def test_launch_sh_is_make_up_then_make_train(tmp_path: Path):
    help_ = subprocess.run(["bash", str(ROOT / "launch.sh"), "--help"], capture_output=True, text=True)
    assert help_.returncode == 0 and "--skip-setup" in help_.stdout and "--episodes N" in help_.stdout
    result, calls = _script(tmp_path, "launch.sh", "--task", "v2.omnizon-1", "--episodes", "20")
    assert result.returncode == 0, result.stderr
    assert calls == ["up", "train STACK=compose DOMAIN=omnizon EPISODES=20 TASK=v2.omnizon-1"]


def test_launch_sh_skip_setup_trains_only_and_keeps_the_recorded_stack(tmp_path: Path):
    (tmp_path / "env").write_text("HALO_STACK=compose-cpu\n")
    result, calls = _script(
        tmp_path, "launch.sh", "--skip-setup", "--task", "local.playground-1", "--task", "local.playground-2"
    )
    assert result.returncode == 0, result.stderr
    assert calls == ["train STACK=compose-cpu DOMAIN=playground TASK=local.playground-1 local.playground-2"]


def test_teardown_sh_is_make_down(tmp_path: Path):
    result, calls = _script(tmp_path, "teardown.sh")
    assert result.returncode == 0 and calls == ["down"]
    (tmp_path / "make.calls").unlink()
    result, calls = _script(tmp_path, "teardown.sh", "--volumes", "--stack", "compose-cpu")
    assert result.returncode == 0 and calls == ["down STACK=compose-cpu VOLUMES=1"]
    bad, _ = _script(tmp_path, "teardown.sh", "--force")
    assert bad.returncode == 2 and "unknown argument '--force'" in bad.stderr and "Usage: ./teardown.sh" in bad.stderr
