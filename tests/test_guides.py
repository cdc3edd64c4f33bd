"""What the guides (README.md, docs/*.md) say against what holds: the task counts a newcomer's
`make train DOMAIN=<site>` runs offline come from the task registries, and the guides cite no
issue numbers (a reader outside the tracker cannot look them up)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from halo_env.registry import load_real_tasks
from halo_sites.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NUMBERS = {12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen"}


def _counts() -> dict[str, tuple[int, int, int]]:
    """domain -> (local.*, real-offline.*, hosted v2.*) tasks in the registries."""
    local = Counter(t.domain for t in load_tasks() if t.id.startswith("local."))
    offline = Counter(t.domain for t in load_tasks() if t.id.startswith("real-offline."))
    hosted = Counter(t.domain for t in load_real_tasks())
    return {d: (local[d], offline[d], hosted[d]) for d in sorted(set(local) | set(offline) | set(hosted))}


def test_the_readme_table_of_what_each_domain_runs_offline_is_the_registrys() -> None:
    rows = re.findall(r"^\| (\w+) \| (\d+) of (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", README, re.M)
    table = {d: tuple(int(x) for x in rest) for d, *rest in rows}
    expected = {d: (lo + off, lo + off + h, lo, off, h) for d, (lo, off, h) in _counts().items()}
    assert table == expected
    runs, listed = expected["omnizon"][:2]
    assert f"`make train DOMAIN=omnizon` runs {runs} of the {listed} omnizon tasks" in " ".join(README.split())


def test_your_first_run_counts_the_playground_tasks_a_run_gets() -> None:
    first_run = README.split("## Your first run", 1)[1].split("\n## ", 1)[0]
    playground = [t for t in load_tasks("playground")]  # all on the clones: every one runs offline
    assert f"trains on the {NUMBERS[len(playground)]} Playground tasks" in " ".join(first_run.split())


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_guides_cite_no_issue_numbers(guide: Path) -> None:
    text = guide.read_text(encoding="utf-8")
    cited = [m.group(0) for m in re.finditer(r"\bissues? #?\d+|issue-\d+", text, re.I)]
    assert not cited, cited


def test_the_code_and_tests_cite_no_issue_numbers() -> None:
    """A comment's "why" says what happened, not a tracker's number."""
    pattern = re.compile(r"\bissue" + r" \d+", re.I)  # split, so this file does not match itself
    cited = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for top in ("services", "shared", "tests", "bench", "experiments")
        for path in sorted((ROOT / top).rglob("*.py"))
        for m in pattern.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not cited, cited


def test_the_readme_stays_a_guide_of_under_220_lines() -> None:
    """Experiments and their figures go to docs/results.md; the README says how to use what holds."""
    assert len(README.splitlines()) < 220
