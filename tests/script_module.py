"""Load one of the repository's scripts (scripts/, experiments/, bench/) as a module, for tests of its functions.

The scripts are programs, not packages: they are loaded from their file. The module is registered
in ``sys.modules`` under its file's stem before it runs, as an import would, so its dataclasses and
anything that looks itself up by module name work.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative_path: str) -> ModuleType:
    """``relative_path`` from the repository root, e.g. ``experiments/learning_probe.py``."""
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
