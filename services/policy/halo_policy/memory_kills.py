"""Whether the kernel's out-of-memory killer struck inside this container, from its cgroup's own counter.

vLLM runs as the launcher's child (with its engine and workers below it), so when the OOM killer
takes one of them the container itself does not die and Docker's `OOMKilled` stays false: vLLM
just exits with some code. The cgroup's `oom_kill` counter (cgroup v2 `memory.events`, v1
`memory.oom_control`) says what happened, and its memory limit says what the limit was.
"""

from __future__ import annotations

from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
UNLIMITED_V1 = 1 << 60  # cgroup v1 reports "no limit" as a huge page-rounded number


def oom_kills(root: Path = CGROUP) -> int | None:
    """Processes the OOM killer has killed in this cgroup so far; None where no counter is readable."""
    for path in (root / "memory.events", root / "memory" / "memory.oom_control"):
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def memory_limit_bytes(root: Path = CGROUP) -> int | None:
    """The cgroup's memory limit in bytes; None when unlimited or unreadable."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < UNLIMITED_V1:
            return int(text)
        return None
    return None


def killed_for_memory(before: int | None, root: Path = CGROUP) -> str:
    """A clause for an exit message when the OOM killer struck since ``before`` was read, else ""."""
    after = oom_kills(root)
    if before is None or after is None or after <= before:
        return ""
    limit = memory_limit_bytes(root)
    where = f"this container's memory limit, {limit / 2**30:.2f} GiB" if limit else "the machine's memory"
    return f"; the out-of-memory killer killed {after - before} of its processes ({where}: raise it or serve less)"
