"""The offline clones' task registry and their evaluation through agisdk's own WebCloneEvaluator.

A site is a folder ``halo_sites/sites/<site>/`` with ``tasks/<site>-<n>.json`` (agisdk's v2 task
schema, id ``local.<site>-<n>``) and ``evals/eval_<site>_<n>.py`` (reads the /finish JSON given as
its first argument, prints SUCCESS or FAILURE). ``evaluate`` hands a task's JSON file to agisdk's
``TaskConfig`` and points the evaluator at the site's ``evals/`` folder, so script, jmespath and
exact-match evals run exactly as they do for REAL's hosted tasks.

REAL v2 offline (``real-offline.<site>-<n>``): REAL's own v2 tasks that a clone supports faithfully,
named in ``sites/<site>/real_v2.json`` (``{"config": {...}, "supported": [...], "unsupported":
{name: reason}}``). Their goal and evals are agisdk's task file unchanged; only the site url and the
clone's ``config`` (which dataset the page builds) are set here. They are judged by agisdk's own
task file and its own eval scripts in the installed package (no copy).

The agent's answer is judged as agisdk judges it. agisdk gives its scripts and jmespath queries the
/finish JSON alone and hands the model's response to ``WebCloneEvaluator.evaluate(state,
model_response)`` beside it (only an ``llm_boolean`` eval reads it). A REAL task is judged exactly
so: its state is the /finish JSON, untouched, and the answer goes in as the model response. Some of
REAL's scripts search every string of the state, so an answer merged into it would pass them with a
plausible sentence and no action at all (``tests/sites/test_real_answers.py``).

The project's own retrieval tasks (``local.*`` only) need the answer where a script can read it:
``evaluate`` adds it to their state as the top-level key ``answer`` (string or null), a key no clone's
/finish JSON has. A jmespath eval ``{"type": "jmespath", "query": "answer", "expected_value": "..."}``
is then an exact match, and an eval script can read ``data["answer"]`` and normalise it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import threading
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from halo.schemas import Action, Task, ValidationResult

PACKAGE_DIR = Path(__file__).resolve().parent
SITES_DIR = PACKAGE_DIR / "sites"
SOLUTIONS_DIR = PACKAGE_DIR / "solutions"
TASK_PREFIX = "local."
REAL_PREFIX = "real-offline."
REAL_VERSION = "v2"

_TASK_FILE = re.compile(r"^(?P<site>[a-z][a-z0-9_]*)-(?P<n>\d+)\.json$")
_SUPPORTED_EVALS = {"script", "jmespath"}  # llm_boolean needs a hosted LLM: not for offline tasks
# agisdk's evaluator prints its log to stdout; redirecting stdout is process-wide, hence the lock.
_EVAL_LOCK = threading.Lock()


class TaskFileError(ValueError):
    """A task file in a site folder breaks the rules in docs/sites.md."""


def site_names() -> list[str]:
    """Every site that has an app page (``sites/<site>/static/index.html``)."""
    return sorted(p.parent.parent.name for p in SITES_DIR.glob("*/static/index.html"))


def site_dir(site: str) -> Path:
    return SITES_DIR / site


def _check_task(task: Task, path: Path, site: str) -> None:
    expected = f"{TASK_PREFIX}{path.stem}"
    if task.id != expected:
        raise TaskFileError(f"{path.name}: id must be {expected!r}, got {task.id!r}")
    if task.website.id != site:
        raise TaskFileError(f"{path.name}: website.id must be {site!r}, got {task.website.id!r}")
    if task.website.url != f"/{site}/":
        raise TaskFileError(f"{path.name}: website.url must be '/{site}/', got {task.website.url!r}")
    if not task.evals:
        raise TaskFileError(f"{path.name}: a task needs at least one eval")
    for ev in task.evals:
        kind = ev.get("type") or ("script" if ev.get("script") else "")
        if kind not in _SUPPORTED_EVALS:
            raise TaskFileError(
                f"{path.name}: eval type {kind!r} is not supported offline ({sorted(_SUPPORTED_EVALS)})"
            )
        if kind == "script" and not (site_dir(site) / "evals" / ev["script"]).is_file():
            raise TaskFileError(f"{path.name}: eval script {ev['script']!r} not found in sites/{site}/evals/")


@cache
def _registry() -> dict[str, tuple[Task, Path]]:
    found: list[tuple[str, int, Task, Path]] = []
    for site in site_names():
        for path in (site_dir(site) / "tasks").glob("*.json"):
            m = _TASK_FILE.match(path.name)
            if not m or m["site"] != site:
                raise TaskFileError(f"sites/{site}/tasks/{path.name}: task files are named '{site}-<n>.json'")
            task = Task.model_validate(json.loads(path.read_text(encoding="utf-8")))
            _check_task(task, path, site)
            found.append((site, int(m["n"]), task, path))
    found.sort(key=lambda t: (t[0], t[1]))
    return {task.id: (task, path) for _, _, task, path in found}


def agisdk_tasks_dir() -> Path:
    """agisdk's v2 task files, found without importing agisdk (its import pulls in browsergym)."""
    spec = importlib.util.find_spec("agisdk")
    if spec is None or not spec.submodule_search_locations:
        raise TaskFileError("agisdk is not installed: REAL's v2 tasks cannot be read")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "REAL" / "browsergym" / "webclones" / REAL_VERSION / "tasks"


def real_offline_manifest(site: str) -> dict[str, Any]:
    """``sites/<site>/real_v2.json``: the clone config, supported and unsupported REAL tasks."""
    path = site_dir(site) / "real_v2.json"
    if not path.is_file():
        return {"config": {}, "supported": [], "unsupported": {}}
    manifest = json.loads(path.read_text(encoding="utf-8"))
    both = set(manifest["supported"]) & set(manifest["unsupported"])
    if both:
        raise TaskFileError(f"sites/{site}/real_v2.json: both supported and unsupported: {sorted(both)}")
    return manifest


def real_offline_left_out() -> dict[str, str]:
    """Every REAL v2 task (agisdk's name, e.g. ``omnizon-28``) that does not run offline, with why:
    the reason its site's ``real_v2.json`` gives, or that no clone of its site lists it."""
    supported = {name for site in site_names() for name in real_offline_manifest(site)["supported"]}
    reasons = {name: why for site in site_names() for name, why in real_offline_manifest(site)["unsupported"].items()}
    left: dict[str, str] = {}
    for path in sorted(agisdk_tasks_dir().glob("*.json")):
        if path.stem not in supported:
            site = path.stem.rsplit("-", 1)[0]
            left[path.stem] = reasons.get(path.stem, f"no offline clone of {site} lists it")
    return left


@cache
def _real_registry() -> dict[str, Task]:
    found: dict[str, Task] = {}
    for site in site_names():
        manifest = real_offline_manifest(site)
        for name in manifest["supported"]:
            path = agisdk_tasks_dir() / f"{name}.json"
            if not path.is_file():
                raise TaskFileError(f"sites/{site}/real_v2.json: agisdk has no v2 task {name!r}")
            data = json.loads(path.read_text(encoding="utf-8"))
            if data["website"]["id"] != site:
                raise TaskFileError(f"sites/{site}/real_v2.json: {name!r} is a task of {data['website']['id']!r}")
            data["id"] = f"{REAL_PREFIX}{name}"
            data["website"] = {**data["website"], "url": f"/{site}/"}
            data["config"] = {**(data.get("config") or {}), **manifest["config"]}
            found[data["id"]] = Task.model_validate(data)
    return dict(sorted(found.items(), key=lambda kv: (kv[1].domain, int(kv[0].rsplit("-", 1)[1]))))


@cache
def real_site_hosts() -> dict[str, str]:
    """REAL's own host names (from agisdk's v2 task files) of every site with a supported REAL task,
    each with its site: the clone server serves such a host's paths as the site's (``halo_sites.app``)."""
    hosts: dict[str, str] = {}
    for site in site_names():
        if not real_offline_manifest(site)["supported"]:
            continue
        for path in agisdk_tasks_dir().glob(f"{site}-*.json"):
            url = json.loads(path.read_text(encoding="utf-8"))["website"]["url"]
            hosts[urlsplit(url).hostname or ""] = site
    hosts.pop("", None)
    return dict(sorted(hosts.items()))


def resolve_task_id(task_id: str) -> str:
    """REAL's own id for a supported task (``v2.<site>-<n>``, what agisdk's harness sends to /config)
    as the clones name it (``real-offline.<site>-<n>``); any other id unchanged."""
    name = task_id.removeprefix(f"{REAL_VERSION}.")
    return f"{REAL_PREFIX}{name}" if name != task_id else task_id


def load_tasks(site: str | None = None) -> list[Task]:
    """All clone tasks (``local.*`` then ``real-offline.*``), or one site's, ordered by number."""
    tasks = [task for task, _ in _registry().values()] + list(_real_registry().values())
    tasks.sort(key=lambda t: (t.domain, t.id.startswith(REAL_PREFIX), int(t.id.rsplit("-", 1)[1])))
    return [task.model_copy(deep=True) for task in tasks if site is None or task.domain == site]


def get_task(task_id: str) -> Task:
    """The task with this id (``local.<site>-<n>`` or ``real-offline.<site>-<n>``); KeyError when
    there is none."""
    if task_id in _real_registry():
        return _real_registry()[task_id].model_copy(deep=True)
    try:
        return _registry()[task_id][0].model_copy(deep=True)
    except KeyError:
        raise KeyError(f"unknown local task {task_id!r}") from None


def task_file(task_id: str) -> Path:
    return _registry()[task_id][1]


def load_solution(task_id: str) -> list[Action]:
    """The reference solution of a task: the actions that solve it from its /config state."""
    path = SOLUTIONS_DIR / f"{task_id}.json"
    return [Action.model_validate(a) for a in json.loads(path.read_text(encoding="utf-8"))]


def _with_answer(task: Task, finish_state: dict[str, Any], answer: str | None) -> dict[str, Any]:
    """A local task's state: the /finish JSON plus the answer under ``answer``."""
    if "answer" in finish_state:
        # The clone itself wrote the key the answer goes to: the answer would overwrite the site's state.
        raise TaskFileError(f"{task.id}: the site's /finish state has a top-level 'answer' key; rename it")
    return {**finish_state, "answer": answer}


def evaluate(task: Task, finish_state: dict[str, Any], answer: str | None = None) -> ValidationResult:
    """Run the task's evals with agisdk's WebCloneEvaluator on a /finish state: a REAL task's state
    alone with the answer as the model response, as agisdk does; a local task's with ``answer`` added."""
    # agisdk pulls in gymnasium and browsergym on import (about 1.5 s): only when first evaluating.
    from agisdk.REAL.browsergym.webclones.evaluate import WebCloneEvaluator
    from agisdk.REAL.browsergym.webclones.task_config import TaskConfig

    if task.id.startswith(REAL_PREFIX):
        # REAL's own task file and eval scripts, exactly as agisdk resolves them for v2.<name>.
        config = TaskConfig(task.id.removeprefix(REAL_PREFIX), version=REAL_VERSION)
    else:
        config = TaskConfig(str(task_file(task.id)), version="v2", is_path=True)
        # The documented hook: the evaluator looks for scripts in the config's eval_scripts_dir first.
        config.eval_scripts_dir = str(site_dir(task.domain) / "evals")
    evaluator = WebCloneEvaluator(task_config=config)
    env_state = finish_state if task.id.startswith(REAL_PREFIX) else _with_answer(task, finish_state, answer)
    with _EVAL_LOCK, contextlib.redirect_stdout(io.StringIO()):
        reward, _, _, info = evaluator.evaluate(env_state, answer or "")
    details: list[str] = []
    for ev, (ok, extra) in zip(task.evals, info["results"], strict=True):
        what = ev.get("script") or ev.get("query") or ev.get("type", "eval")
        if isinstance(extra, dict) and "output" in extra:
            outcome = extra["output"] or (extra.get("stderr") or "no output")[-300:]
        elif isinstance(extra, dict) and "actual_value" in extra:
            outcome = f"got {extra['actual_value']!r}, expected {extra['expected_value']!r}"
        else:
            outcome = str(extra)[:300]
        details.append(f"{'ok' if ok else 'failed'}: {what}: {outcome}")
    success = all(ok for ok, _ in info["results"])
    return ValidationResult(
        task_id=task.id, success=success, reward=float(reward), details=details, finish_state=finish_state
    )


if __name__ == "__main__":  # `halo tasks list` and `halo train --help` run this (the CLI imports no service package)
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m halo_sites.tasks", description="The local tasks as JSON.")
    parser.add_argument("--site", default=None, help="only this site's tasks")
    parser.add_argument("--domains", action="store_true", help="only the sites (domains) that have tasks, sorted")
    args = parser.parse_args()
    if args.domains:  # `halo train --help` names them
        sys.stdout.write(json.dumps(sorted({t.domain for t in load_tasks()})) + "\n")
    else:
        sys.stdout.write(json.dumps([t.model_dump(mode="json") for t in load_tasks(args.site)]) + "\n")
