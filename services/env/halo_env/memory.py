"""Memory of Chromium process trees, read from /proc (Linux only; zero elsewhere).

PSS (proportional set size) is used where the kernel provides it: Chromium's renderers share most
of their pages with each other, so summing RSS would count the shared libraries once per process.
"""

from __future__ import annotations

import os
from pathlib import Path

_PROC = Path("/proc")


def pids_with_arg(marker: str) -> list[int]:
    """Processes whose command line contains ``marker`` (a switch we passed to our own Chromium)."""
    found = []
    for entry in _PROC.glob("[0-9]*"):
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _children_index() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in _PROC.glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: ppid is the second field after the last ')'.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(roots: list[int]) -> list[int]:
    """``roots`` and every process below them."""
    index = _children_index()
    out, stack = [], list(roots)
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(index.get(pid, []))
    return out


def process_memory_bytes(pid: int) -> int:
    """PSS of one process (RSS when smaps_rollup is unreadable); 0 when it is gone."""
    try:
        for line in (_PROC / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        pages = int((_PROC / str(pid) / "statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def tree_memory_bytes(roots: list[int]) -> int:
    """Total memory of ``roots`` and their descendants."""
    return sum(process_memory_bytes(pid) for pid in descendants(roots))
