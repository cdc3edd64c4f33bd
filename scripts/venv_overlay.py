"""A checkout's own ``.venv``: a small virtual environment over the shared, cached one.

The cached environment (``scripts/setup.sh``: about 6 GB, one per lock file, shared by every
checkout on the machine) holds third-party packages only. Each checkout's ``.venv`` is a venv of
its own (no pip, no packages) whose site-packages holds two path files:

- ``_halo_a_checkout.pth``: this checkout's package roots (``[tool.setuptools.packages.find]
  where`` of pyproject.toml), first on ``sys.path``, so ``import halo`` is always this checkout's;
- ``_halo_b_base.pth``: ``site.addsitedir(<cached site-packages>)``, the third-party packages (their
  own path files processed too).

Its ``bin`` has ``python`` (the base interpreter, as any venv), the cached environment's console
scripts (pytest, ruff, pip, ...) rewritten to run under this ``.venv``'s python (binaries are
linked), and the project's own console scripts (``[project.scripts]``: ``halo``). Nothing here
writes outside ``--dir``: one checkout's setup never changes another's. Idempotent; files are
replaced atomically, so a process starting meanwhile sees the old file or the new one.

Standard library only: scripts/setup.sh runs it with the base interpreter.

    python3.11 scripts/venv_overlay.py --root . --base ~/.cache/halo/venv-<key> --dir .venv
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
import venv
from pathlib import Path

SKIPPED = ("python", "activate", "Activate", "deactivate")
BASE_FILE = "halo-base"  # the cached environment this overlay stands on (read by setup.sh's pruning)


def write(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` atomically, and only when its content changes."""
    if path.is_file() and not path.is_symlink() and path.read_text(errors="replace") == text:
        return
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    tmp.chmod(mode)
    os.replace(tmp, path)


def link(path: Path, target: Path) -> None:
    if path.is_symlink() and os.readlink(path) == str(target):
        return
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, path)


def site_packages(prefix: Path) -> Path:
    """A venv's site-packages (the base interpreter's install scheme may differ, e.g. Debian's)."""
    return prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def overlay(root: Path, base: Path, directory: Path, final: Path) -> None:
    """Fill ``directory`` (the overlay, which will live at ``final``) for checkout ``root``."""
    if not (directory / "pyvenv.cfg").exists():
        venv.EnvBuilder(with_pip=False, symlinks=True).create(directory)
        # The activation scripts name the folder they were made in; the overlay may be renamed into place.
        for script in (directory / "bin").glob("activate*"):
            script.write_text(script.read_text().replace(str(directory), str(final)))
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    roots = pyproject["tool"]["setuptools"]["packages"]["find"]["where"]
    packages = site_packages(directory)
    packages.mkdir(parents=True, exist_ok=True)
    write(packages / "_halo_a_checkout.pth", "".join(f"{(root / r).resolve()}\n" for r in roots))
    write(packages / "_halo_b_base.pth", f"import site; site.addsitedir({str(site_packages(base))!r})\n")
    write(directory / BASE_FILE, f"{base}\n")

    bin_dir, python = directory / "bin", final / "bin" / "python"
    project_scripts = pyproject["project"].get("scripts", {})
    for script in sorted((base / "bin").iterdir()):
        if script.name.startswith(SKIPPED) or script.name in project_scripts or script.is_dir():
            continue
        head = script.read_bytes()[:512]
        if head.startswith(b"#!") and str(base).encode() in head:
            text = script.read_text()
            # pip writes the interpreter's path in the shebang (or, for a long path, in a sh trampoline).
            for name in ("python3.11", "python3", "python"):
                text = text.replace(f"{base}/bin/{name}", str(python))
            write(bin_dir / script.name, text, 0o755)
        else:
            link(bin_dir / script.name, script.resolve())
    for name, entry in project_scripts.items():
        module, _, attr = entry.partition(":")
        write(
            bin_dir / name,
            f"#!{python}\nimport sys\nfrom {module} import {attr}\n\nif __name__ == '__main__':\n    sys.exit({attr}())\n",
            0o755,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the checkout")
    parser.add_argument("--base", type=Path, required=True, help="the cached environment (third-party packages)")
    parser.add_argument("--dir", type=Path, required=True, help="the overlay to make or refresh")
    parser.add_argument("--final", type=Path, default=None, help="where the overlay will live (default: --dir)")
    args = parser.parse_args(argv)
    directory = args.dir.absolute()
    overlay(args.root.resolve(), args.base.absolute(), directory, (args.final or directory).absolute())
    return 0


if __name__ == "__main__":
    sys.exit(main())
