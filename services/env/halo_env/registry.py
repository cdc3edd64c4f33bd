"""REAL's task registry as agisdk ships it, and its snapshot in ``configs/`` for reproducibility.

The task files are read straight from agisdk's package folder (importing agisdk itself pulls in
browsergym and gymnasium, about 1.5 s): ``v2.<site>-<n>`` ids, agisdk's v2 JSON otherwise intact.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import tempfile
from functools import cache
from pathlib import Path

from halo.schemas import Task

VERSION = "v2"


@cache
def webclones_dir() -> Path:
    spec = importlib.util.find_spec("agisdk")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("agisdk is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "REAL" / "browsergym" / "webclones"


def _tasks_dir(version: str = VERSION) -> Path:
    return webclones_dir() / version / "tasks"


def _scripts_dir(version: str = VERSION) -> Path:
    return webclones_dir() / version / "eval_scripts"


def split_id(task_id: str) -> tuple[str, str]:
    """``v2.gomail-3`` -> (``v2``, ``gomail-3``); ``KeyError`` for anything else."""
    version, _, name = task_id.partition(".")
    if version != VERSION or not name or "/" in name or name.startswith("."):
        raise KeyError(f"not a REAL {VERSION} task id: {task_id!r}")
    return version, name


@cache
def _raw(task_id: str) -> dict:
    version, name = split_id(task_id)
    path = _tasks_dir(version) / f"{name}.json"
    if not path.is_file():
        raise KeyError(f"unknown REAL task {task_id!r}")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["id"] = task_id
    data.setdefault("version", version)
    return data


def real_task_ids() -> list[str]:
    return sorted(f"{VERSION}.{p.stem}" for p in _tasks_dir().glob("*.json"))


def get_real_task(task_id: str) -> Task:
    return Task.model_validate(_raw(task_id))


def load_real_tasks(domain: str | None = None) -> list[Task]:
    tasks = [get_real_task(t) for t in real_task_ids()]
    return [t for t in tasks if domain is None or t.domain == domain]


def snapshot_real_tasks(out_path: Path | str) -> int:
    """Write agisdk's v2 registry (every task, with a hash of each eval script) to ``out_path``;
    returns how many tasks it holds.

    The file pins what "v2.gomail-3" meant when a result was produced: agisdk may change a goal or
    an eval script in a later release, and a run's config can then be compared against it.
    """
    out = Path(out_path)
    tasks = []
    for task_id in real_task_ids():
        data = dict(_raw(task_id))
        scripts = {}
        for ev in data.get("evals", []):
            script = ev.get("script")
            if script:
                path = _scripts_dir() / script
                scripts[script] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        data["eval_script_sha256"] = scripts
        tasks.append(data)
    payload = {
        "source": "agisdk",
        "agisdk_version": importlib.metadata.version("agisdk"),
        "version": VERSION,
        "count": len(tasks),
        "tasks": tasks,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, out)
    return len(tasks)


if __name__ == "__main__":  # `halo tasks snapshot` runs this (the CLI imports no service package)
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m halo_env.registry", description="Write the REAL v2 registry.")
    parser.add_argument("--out", required=True, help="output JSON file")
    sys.stdout.write(f"{snapshot_real_tasks(parser.parse_args().out)}\n")
