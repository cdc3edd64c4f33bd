"""One-way layers inside the trainer (``halo_trainer``), checked on the source as
``test_import_rules.py`` checks the packages: every ``import`` statement of every module (top level,
inside a function or under ``TYPE_CHECKING``), parsed with ``ast``, nothing executed.

A module imports from its own sub-package and from the layers below its own, never from a layer
above nor from another sub-package of its own layer (docs/packages.md, "Inside the trainer").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAINER = ROOT / "services" / "trainer" / "halo_trainer"

# Bottom first. A unit is a sub-package or a top-level module of halo_trainer.
LAYERS: list[tuple[str, ...]] = [
    ("keys",),  # the Redis key names
    ("streams",),  # the queues over them and the current-policy record
    ("observe",),  # metrics, episode records, trackers, plots, the run viewer: reads what it is given
    ("learner",),  # the model and its updates, checkpoints, the memory plan
    ("config",),  # a run's resolved settings
    ("checks",),  # run-start checks against the policy server, the memory-plan CLI
    ("rollout", "loop_parts"),  # playing a job; what every run loop is built from
    ("grpo", "mcts"),  # the algorithms
    (
        "evaluation",
        "loops",
        "worker",
        "doctor",
    ),  # the evaluation matrix; the loop table; the job-kind table; halo doctor
    ("search_baselines",),  # search arms compared against MCTS on the evaluation's tasks
    ("api",),  # the run API and the run manager
    ("__main__",),
]
RANK = {unit: rank for rank, layer in enumerate(LAYERS) for unit in layer}


def unit_of(path: Path) -> str:
    """The sub-package or top-level module a file belongs to ('' for the package's own __init__)."""
    first = path.relative_to(TRAINER).parts[0]
    return "" if first == "__init__.py" else first.removesuffix(".py")


def imported_units(source: str, path: Path) -> list[tuple[int, str]]:
    """(line, unit) of every import of a halo_trainer unit in ``source`` (``path``: where it lives,
    for relative imports)."""
    here = path.relative_to(TRAINER.parent).with_suffix("").parts  # ("halo_trainer", "observe", ...)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(here[: len(here) - node.level]) if node.level else []
            module = base + (node.module.split(".") if node.module else [])
            # `from halo_trainer import keys` names the unit in the imported names
            modules = [module + [a.name] for a in node.names] if len(module) == 1 else [module]
        else:
            continue
        found += [(node.lineno, m[1]) for m in modules if len(m) > 1 and m[0] == "halo_trainer"]
    return found


def violations(path: Path, source: str) -> list[str]:
    unit = unit_of(path)
    if not unit:
        return []
    bad = []
    for line, target in imported_units(source, path):
        if target == unit:
            continue
        if target not in RANK:
            bad.append(f"{path.relative_to(ROOT)}:{line}: imports {target}, which has no layer")
        elif RANK[target] >= RANK[unit]:
            where = "another sub-package of its layer" if RANK[target] == RANK[unit] else "a layer above"
            bad.append(f"{path.relative_to(ROOT)}:{line}: {unit} imports {target}, {where}")
    return bad


def test_every_unit_of_the_trainer_has_a_layer() -> None:
    units = {unit_of(p) for p in TRAINER.rglob("*.py")} - {""}
    assert not units - set(RANK), f"declare these in LAYERS: {sorted(units - set(RANK))}"
    assert len(RANK) == sum(len(layer) for layer in LAYERS), "a unit is named in two layers"


def test_the_trainer_imports_only_downwards() -> None:
    bad = [v for p in sorted(TRAINER.rglob("*.py")) for v in violations(p, p.read_text(encoding="utf-8"))]
    assert not bad, "imports against the trainer's layers (tests/test_trainer_layers.py):\n" + "\n".join(bad)


# The upward imports the layers were made to remove: each, put back, must be caught.
PUT_BACK = [
    ("config.py", "from halo_trainer.mcts.settings import MCTSConfig\n"),
    ("learner/memory/plan.py", "from halo_trainer.config import RunConfig\n"),
    ("rollout/services.py", "from halo_trainer.mcts.jobs import run_search_job\n"),  # was rollout/worker.py
    ("observe/viewer/trees.py", "from halo_trainer.mcts.tree import Tree, load_tree\n"),
    ("observe/episode_log.py", "def f():\n    from halo_trainer.learner.batching import advantages\n"),
    ("observe/metrics.py", "if TYPE_CHECKING:\n    from halo_trainer.learner.batching import Selection\n"),
    ("rollout/play.py", "from halo_trainer import worker\n"),
    ("grpo/loop.py", "from .. import mcts\n"),
]


@pytest.mark.parametrize(("file", "line"), PUT_BACK, ids=[f for f, _ in PUT_BACK])
def test_an_upward_import_put_back_is_caught(file: str, line: str) -> None:
    path = TRAINER / file
    source = path.read_text(encoding="utf-8")
    assert not violations(path, source), "the file breaks the layers already"
    assert violations(path, source + "\n" + line), f"{file} importing upwards was not caught: {line!r}"


def test_the_checker_sees_every_form_of_import() -> None:
    path = TRAINER / "observe" / "metrics.py"
    source = (
        "import halo_trainer.api.app\nfrom halo_trainer import keys, loops\nfrom ..mcts import tree\n"
        "from . import trackers\nimport os\n"
    )
    assert imported_units(source, path) == [(1, "api"), (2, "keys"), (2, "loops"), (3, "mcts"), (4, "observe")]


def _module_of(path: Path) -> str:
    parts = path.relative_to(TRAINER.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(sources: dict[Path, str]) -> dict[str, set[str]]:
    """module -> the halo_trainer modules it imports (every import statement, as ``imported_units``
    reads them: `from a.b import c` counts a.b, and a.b.c where c is a module)."""
    modules = {_module_of(p): p for p in sources}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = path.relative_to(TRAINER.parent).with_suffix("").parts
        found: set[str] = set()
        for node in ast.walk(ast.parse(sources[path])):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = list(here[: len(here) - node.level]) if node.level else []
                module = ".".join(base + (node.module.split(".") if node.module else []))
                named = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            else:
                continue
            found |= {m for m in named if m in modules and m != name}
        graph[name] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _trainer_sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(TRAINER.rglob("*.py"))}


def test_no_module_of_the_trainer_imports_itself_back() -> None:
    """No import circle, `TYPE_CHECKING` imports included: an objective (DPO) uses the learner's
    public calls and the learner does not know it, as the layers keep the packages one-way."""
    assert not circles(import_graph(_trainer_sources()))


def test_the_circle_the_dpo_objective_made_is_caught_when_put_back() -> None:
    sources = _trainer_sources()
    learner = TRAINER / "learner" / "learner.py"
    sources[learner] += "\nfrom halo_trainer.learner.dpo_update import dpo_update\n"
    assert circles(import_graph(sources)) == [["halo_trainer.learner.dpo_update", "halo_trainer.learner.learner"]]
