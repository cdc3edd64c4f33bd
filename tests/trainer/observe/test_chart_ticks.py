"""The run charts' axis helpers (charts.js), run by node on the file the viewer serves: tick labels
that tell the ticks apart and never read "-0", whole updates on the update axis, a range around a
lone point, and a lone point drawn large."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from halo_trainer.observe import viewer

CHARTS_JS = Path(viewer.__file__).parent / "static" / "charts.js"

# charts.js as a plain script, with the page's globals it touches at load stood in.
RUNNER = """
const vm = require("vm");
const fs = require("fs");
const context = { window: { addEventListener() {} }, localStorage: { getItem: () => null } };
vm.createContext(context);
vm.runInContext(fs.readFileSync(process.argv[1], "utf8"), context);
const calls = JSON.parse(process.argv[2]);
console.log(JSON.stringify(calls.map(([name, args]) => vm.runInContext(name, context)(...args))));
"""


def call(*calls: tuple[str, list]) -> list:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    out = subprocess.run(
        ["node", "-e", RUNNER, str(CHARTS_JS), json.dumps(calls)], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_tick_labels_are_distinct_and_never_minus_zero() -> None:
    loss, small, tiny, plain = call(
        ("tickLabels", [[-0.0004, -0.0002, 0, 0.0002]]),
        ("tickLabels", [[-0.001, -0.0005, -1e-17]]),  # a float artefact a hair below zero
        ("tickLabels", [[1e-7, 2e-7, 3e-7]]),
        ("tickLabels", [[0, 0.5, 1]]),
    )
    assert loss == ["-0.0004", "-0.0002", "0.0000", "0.0002"]
    assert small == ["-0.0010", "-0.0005", "0.0000"]
    assert len(set(tiny)) == 3 and all("e-7" in t for t in tiny)
    assert plain == ["0.0", "0.5", "1.0"]
    for labels in (loss, small, tiny, plain):
        assert len(set(labels)) == len(labels) and not any(t.startswith("-0") and float(t) == 0 for t in labels)


def test_the_update_axis_steps_by_whole_updates_and_a_lone_point_gets_room() -> None:
    incrs, lone_update, lone_time, spread, alone, many = call(
        ("(() => UPDATE_INCRS)", []),
        ("((a, b) => xRange('update')(null, a, b))", [0, 0]),
        ("((a, b) => xRange('time')(null, a, b))", [1000, 1000]),
        ("((a, b) => xRange('update')(null, a, b))", [1, 2]),
        ("pointsOf", [[None, 0.5], False, True]),
        ("pointsOf", [[0.1, 0.5], False, True]),
    )
    assert all(isinstance(i, int) and i >= 1 for i in incrs)
    assert lone_update == [0, 1] and lone_time == [940, 1060] and spread == [1, 2]
    assert alone == {"show": True, "size": 7} and many == {"show": True, "size": 3}
