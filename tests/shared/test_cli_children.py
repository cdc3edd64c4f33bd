"""A `halo` command that runs another entry point as a child stops it when the command is stopped.

The real case: `halo view` stopped with SIGTERM left its web server running, holding the
port. Here the real `halo view` serves a run folder on a free port, the test signals the `halo`
process only (not its group, as `kill <pid>` or a supervisor would), and the port must be free again
and the server gone. SIGINT is Ctrl-C sent to the command; SIGKILL leaves no handler to run, and the
kernel's parent-death signal stops the server then.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from halo.cli.children import exit_code, run_child
from tests import lifetime
from tests.conftest import free_port


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc, as the watchdog reads it)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _gone(pid: int) -> bool:
    """Exited (a zombie waiting for its reaper counts: it holds no port and runs nothing)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _run_folder(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"run_id": "r1", "domain": "playground"}))
    return run


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_halo_view_stopped_frees_its_port(tmp_path: Path, signum: signal.Signals):
    port = free_port()
    cli = lifetime.popen(
        [sys.executable, "-m", "halo.cli.main", "view", str(_run_folder(tmp_path)), "--port", str(port)],
        stdout=open(tmp_path / "out.log", "w"),  # noqa: SIM115 - closed with the process
        stderr=open(tmp_path / "err.log", "w"),  # noqa: SIM115
        cwd=tmp_path,
        env={**os.environ, "HALO_DATA_DIR": str(tmp_path / "var")},
    )
    deadline = time.monotonic() + 60
    while True:  # the server answers: the child is up and holds the port
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ui/", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert cli.poll() is None, (tmp_path / "err.log").read_text()
        assert time.monotonic() < deadline, "halo view did not serve within 60 s"
        time.sleep(0.2)
    servers = _children(cli.pid)
    assert servers, "halo view serves from a child process"

    os.kill(cli.pid, signum)  # the command only, never its group
    code = cli.wait(timeout=30)
    deadline = time.monotonic() + 15
    while not (_port_free(port) and all(_gone(p) for p in servers)):
        assert time.monotonic() < deadline, f"port {port} still held after the command ended on {signum.name}"
        time.sleep(0.1)
    if signum is not signal.SIGKILL:
        assert code == 128 + signum, (tmp_path / "err.log").read_text()  # the status a signalled command has


def test_run_child_kills_a_child_that_ignores_the_signal(tmp_path: Path):
    """A child that ignores SIGTERM gets ``grace_s``, then its group is killed; the command's status says why."""
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    )
    command = (
        "import sys; from halo.cli.children import exit_code, run_child; "
        f"r = run_child([sys.executable, '-c', {stubborn!r}], grace_s=1.0); "
        "print('child', r.returncode, flush=True); sys.exit(exit_code(r))"
    )
    cli = lifetime.popen([sys.executable, "-c", command], stdout=-1, text=True)
    assert cli.stdout.readline() == "up\n"  # the child runs and ignores SIGTERM from here on
    started = time.monotonic()
    cli.send_signal(signal.SIGTERM)
    assert cli.wait(timeout=20) == 128 + signal.SIGTERM
    assert cli.stdout.read() == f"child {-signal.SIGKILL}\n"  # killed after the grace, not before
    assert 0.9 < time.monotonic() - started < 15


def test_run_child_without_a_signal_is_subprocess_run():
    result = run_child([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], stdout=-1, text=True)
    assert result.returncode == 3 and exit_code(result) == 3 and result.stdout == "out\n"
