"""The policy launcher's out-of-memory clause (halo_policy.memory_kills), on the cgroup files the kernel writes.

This machine's own cgroup (v1 here: memory.oom_control, an unlimited memory.limit_in_bytes) is read
as it is; cgroup v2's files are written as the kernel formats them. A real kill by a container's
memory limit, through Compose, is tests/compose/test_make_up_failures.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from halo_policy.memory_kills import CGROUP, killed_for_memory, memory_limit_bytes, oom_kills

V2_EVENTS = "low 0\nhigh 0\nmax 12\noom {n}\noom_kill {n}\noom_group_kill 0\n"


@pytest.mark.skipif(not (CGROUP / "memory.events").exists() and not (CGROUP / "memory").is_dir(), reason="no cgroup")
def test_this_machines_cgroup_is_read():
    assert isinstance(oom_kills(), int)
    assert killed_for_memory(oom_kills()) == ""  # nothing was killed since it was read


def test_cgroup_v2_counters_and_limit(tmp_path: Path):
    (tmp_path / "memory.events").write_text(V2_EVENTS.format(n=0))
    (tmp_path / "memory.max").write_text("max\n")
    before = oom_kills(tmp_path)
    assert before == 0 and memory_limit_bytes(tmp_path) is None
    (tmp_path / "memory.events").write_text(V2_EVENTS.format(n=1))
    assert killed_for_memory(before, tmp_path) == (
        "; the out-of-memory killer killed 1 of its processes (the machine's memory: raise it or serve less)"
    )
    (tmp_path / "memory.max").write_text(f"{3 * 2**29}\n")
    assert "this container's memory limit, 1.50 GiB" in killed_for_memory(before, tmp_path)


def test_cgroup_v1_counters_and_an_unreadable_cgroup(tmp_path: Path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert oom_kills(tmp_path) == 3 and memory_limit_bytes(tmp_path) is None
    assert oom_kills(tmp_path / "nowhere") is None and killed_for_memory(None, tmp_path) == ""
