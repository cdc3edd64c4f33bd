"""Two checkouts on one machine each run their own code, and one's setup never changes another's.

Two fresh clones of this repository run the real ``scripts/setup.sh`` against the same shared
environment as this checkout (as a second user's clone and CI's fresh clone do); each imports its
own ``halo`` and runs its own code through its ``.venv`` (python, pytest, halo); the second is
deleted, as CI deletes its clone; this checkout's ``.venv`` is byte for byte what it was before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from halo.settings import REPO_ROOT

pytestmark = pytest.mark.slow


def snapshot(venv: Path) -> dict[str, str]:
    """Every entry of a ``.venv``: a link's target or a file's digest."""
    out = {}
    for path in sorted(venv.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        key = str(path.relative_to(venv))
        if path.is_symlink():
            out[key] = f"-> {os.readlink(path)}"
        elif path.is_file():
            out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def run(argv: list[str], cwd: Path, timeout: float = 600) -> str:
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{argv} in {cwd}: {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def clone_and_set_up(root: Path, name: str) -> Path:
    run(["git", "clone", "-q", "--no-hardlinks", str(REPO_ROOT), str(root)], cwd=REPO_ROOT)
    (root / "shared" / "halo" / "_which_checkout.py").write_text(f"NAME = {name!r}\n")
    (root / "own_code_test.py").write_text(
        f"import halo._which_checkout as which\n\n\ndef test_own():\n    assert which.NAME == {name!r}\n"
    )
    run(["bash", "scripts/setup.sh"], cwd=root)
    return root


def own_code(root: Path, name: str) -> None:
    printed = run(
        [".venv/bin/python", "-c", "import halo, halo._which_checkout as w; print(halo.__file__, w.NAME)"], root
    )
    assert printed.split() == [str(root / "shared" / "halo" / "__init__.py"), name]
    run([".venv/bin/pytest", "-q", "--noconftest", "-p", "no:cacheprovider", "own_code_test.py"], root)
    assert "HALO-Agent" in run([".venv/bin/halo", "--help"], root)


def test_two_checkouts_each_run_their_own_code_and_leave_this_one_alone(tmp_path: Path) -> None:
    base_file = REPO_ROOT / ".venv" / "halo-base"
    if not base_file.exists():
        pytest.fail("this checkout's .venv is not an overlay over the shared environment: run scripts/setup.sh")
    base = Path(base_file.read_text().strip())
    mine = snapshot(REPO_ROOT / ".venv")
    users_before = {p.name for p in (base.parent / f"{base.name}.users").glob("*")}
    try:
        first = clone_and_set_up(tmp_path / "first", "first")
        second = clone_and_set_up(tmp_path / "second", "second")  # CI's fresh clone, say
        own_code(first, "first")
        own_code(second, "second")
        assert Path((second / ".venv" / "halo-base").read_text().strip()) == base  # one shared environment
        shutil.rmtree(second)  # CI deletes its clone
        own_code(first, "first")
    finally:
        for record in (base.parent / f"{base.name}.users").glob("*"):
            if record.name not in users_before:
                record.unlink()
    # The shared environment holds third-party packages only: no copy of the project, editable or not.
    site = next((base / "lib").glob("python*/site-packages"))
    assert not [p.name for p in site.iterdir() if "halo_agent" in p.name or p.name.startswith(("halo", "__editable__"))]
    assert subprocess.run([str(base / "bin" / "python"), "-c", "import halo"], capture_output=True).returncode != 0
    # And this checkout's .venv is what it was, running this checkout's code.
    assert snapshot(REPO_ROOT / ".venv") == mine
    printed = run([".venv/bin/python", "-c", "import halo; print(halo.__file__)"], REPO_ROOT)
    assert printed.strip() == str(REPO_ROOT / "shared" / "halo" / "__init__.py")
