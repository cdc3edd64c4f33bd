"""What the guides (README.md, docs/*.md) say against what holds: the task counts a newcomer's
`make train DOMAIN=<site>` runs offline come from the task registries, the guides and the lab
notebook cite no issue numbers (a reader outside the tracker cannot look them up), and every
relative link among them reaches a file and, where it names one, a heading."""

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
NOTEBOOK = sorted((ROOT / "notebook").glob("*.md"))
LINKED = [*GUIDES, *NOTEBOOK, ROOT / "experiments" / "README.md"]
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


@pytest.mark.parametrize("guide", GUIDES + NOTEBOOK, ids=lambda p: p.name)
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
    """Experiments and their figures go to the lab notebook (notebook/); the README says how to use what holds."""
    assert len(README.splitlines()) < 220


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: link text kept, lower case, punctuation but - and _ dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: Counter[str] = Counter()
    found = set()
    for block in re.split(r"^```.*?^```", page.read_text(encoding="utf-8"), flags=re.M | re.S):
        for heading in re.findall(r"^#{1,6} (.+)$", block, re.M):
            anchor = _anchor(heading)
            found.add(anchor if not seen[anchor] else f"{anchor}-{seen[anchor]}")
            seen[anchor] += 1
        found.update(re.findall(r'<a (?:name|id)="([^"]+)"', block))
    return found


def _broken_links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in _anchors(linked):
            broken.append(f"{target}: no such heading")
    return broken


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_file_and_heading(page: Path) -> None:
    """Moving a section (a guide's experiment into the lab notebook) must move its links with it."""
    assert not _broken_links(page)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title `x.y` (z)\n\n## Same\n\n## Same\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#title-xy-z) [dup](a.md#same-1) [x](https://e.org/#q)\n"
        "[gone](c.md) [nohead](a.md#other)\n```\n[in code](d.md)\n```\n",
        encoding="utf-8",
    )
    assert _broken_links(page) == ["c.md: no such file", "a.md#other: no such heading"]


def test_the_lab_notebook_indexes_every_entry() -> None:
    index = (ROOT / "notebook" / "README.md").read_text(encoding="utf-8")
    unlisted = [p.name for p in NOTEBOOK if p.name != "README.md" and f"]({p.name})" not in index]
    assert not unlisted
