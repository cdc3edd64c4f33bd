"""`halo stack up|status|down` with real processes, real Redis (started by the stack when absent)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import redis

from halo.cli import stack, stack_processes, stack_state
from halo.cli.stack_probes import redis_reachable
from tests.conftest import REDIS_URL, free_port
from tests.http_stub import QuietHandler, ServedInThread

ROOT = Path(__file__).resolve().parents[2]
HALO = [sys.executable, "-m", "halo.cli.main"]


@pytest.mark.slow
def test_stack_up_starts_redis_and_services_then_down_stops_them(tmp_path):
    ports = {name: free_port() for name in ("sites", "env", "reward", "redis")}
    env = {
        **os.environ,
        "HALO_DATA_DIR": str(tmp_path),
        "HALO_REDIS_URL": "redis://127.0.0.1:1/0",  # unreachable: the stack must start its own
        "HALO_STACK_REDIS_PORT": str(ports["redis"]),
        "HALO_SITES_PORT": str(ports["sites"]),
        "HALO_ENV_PORT": str(ports["env"]),
        "HALO_ENV_SITES_URL": f"http://127.0.0.1:{ports['sites']}",
        "HALO_REWARD_PORT": str(ports["reward"]),
    }
    args = ["-s", "sites", "-s", "env", "-s", "reward"]
    try:
        up = subprocess.run(
            [*HALO, "stack", "up", *args[:4]], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"starting redis-server on port {ports['redis']}" in up.stdout
        # a later call for one more service keeps the earlier ones recorded (`down` stops them all)
        more = subprocess.run(
            [*HALO, "stack", "up", *args[4:]], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert more.returncode == 0, more.stdout + more.stderr
        up.stdout += more.stdout
        for name in ("sites", "env", "reward"):
            assert f"{name:<8} ready at http://127.0.0.1:{ports[name]}" in up.stdout
            assert httpx.get(f"http://127.0.0.1:{ports[name]}/ready").status_code == 200
        again = subprocess.run(
            [*HALO, "stack", "up", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert again.returncode == 0 and again.stdout.count("already running") == 3, again.stdout
        status = subprocess.run([*HALO, "stack", "status"], env=env, cwd=ROOT, capture_output=True, text=True)
        assert f"redis://127.0.0.1:{ports['redis']}/0" in status.stdout
    finally:
        down = subprocess.run([*HALO, "stack", "down"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stderr
    assert "redis    stopped" in down.stdout
    for name in ("sites", "env", "reward"):
        assert f"{name:<8} stopped" in down.stdout
    for name in ("sites", "env", "reward"):
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{ports[name]}/health", timeout=1)
    assert not (tmp_path / "stack" / "stack.json").exists()


# -- never two instances; every started process stopped; logs appended -----------------------------
def _stack_env(tmp_path: Path, **ports: int) -> dict[str, str]:
    env = {**os.environ, "HALO_DATA_DIR": str(tmp_path), "HALO_REDIS_URL": REDIS_URL}
    for name, port in ports.items():
        env[f"HALO_{name.upper()}_PORT"] = str(port)
    return env


def _processes_of(data_dir: Path) -> list[int]:
    """Live (non-zombie) processes whose environment names ``data_dir``: everything a stack started."""
    marker = f"HALO_DATA_DIR={data_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != "Z":
            found.append(int(entry.name))
    return found


def _record(data_dir: Path, service: str) -> list[dict]:
    state = json.loads((data_dir / "stack" / "stack.json").read_text())
    return [p for p in state["processes"] if p["service"] == service]


@pytest.mark.slow
def test_up_never_starts_a_second_instance_of_a_busy_service(tmp_path):
    """The issue's double start: a service too busy to answer is alive; `up` waits, never starts another."""
    ports = {"sites": free_port(), "reward": free_port()}
    env = _stack_env(tmp_path, **ports)
    args = ["stack", "up", "-s", "sites", "-s", "reward"]
    log = tmp_path / "stack" / "logs" / "reward.log"
    try:
        first = subprocess.run([*HALO, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stdout + first.stderr
        [reward] = _record(tmp_path, "reward")
        first_log = log.read_text()
        assert first_log.count("===== ") == 1 and "resolved settings RewardSettings" in first_log

        os.kill(reward["pid"], signal.SIGSTOP)  # busy: holds its port, answers nothing, not even /health
        try:
            again = subprocess.Popen(
                [*HALO, *args], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            lines = []
            for line in again.stdout:
                lines.append(line)
                if "does not answer /health yet; waiting, not starting another" in line:
                    break
            assert f"pid {reward['pid']} (started earlier)" in lines[-1], "".join(lines)
        finally:
            os.kill(reward["pid"], signal.SIGCONT)
        rest, _ = again.communicate(timeout=300)
        output = "".join(lines) + rest
        assert again.returncode == 0, output
        assert "starting (pid" not in output and "sites    already running" in output

        # still the one instance, still recorded, its log appended to and never truncated
        assert [p["pid"] for p in _record(tmp_path, "reward")] == [reward["pid"]]
        assert log.read_text().startswith(first_log)
        assert httpx.get(f"http://127.0.0.1:{ports['reward']}/health").json()["pid"] == reward["pid"]
        started = set(_processes_of(tmp_path))
        assert reward["pid"] in started
    finally:
        down = subprocess.run([*HALO, "stack", "down"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr
    assert f"reward   stopped (pid {reward['pid']})" in down.stdout
    assert _processes_of(tmp_path) == []


def test_up_refuses_a_port_held_by_another_program(tmp_path, monkeypatch):
    with _HttpStub() as stub:
        for key, value in _stack_env(tmp_path, sites=stub.port).items():
            monkeypatch.setenv(key, value)
        said: list[str] = []
        with pytest.raises(RuntimeError) as err:
            stack.up(["sites"], say=said.append)
    message = str(err.value)
    assert f"port {stub.port} (sites's port" in message and "HTTP 404" in message and "HALO_SITES_PORT" in message
    assert stub.paths == ["/health"]  # it was asked what it is, nothing more
    assert not (tmp_path / "stack" / "logs" / "sites.log").exists()  # nothing was started
    assert _processes_of(tmp_path) == []


def test_down_stops_recorded_processes_but_never_a_recycled_pid(tmp_path, monkeypatch):
    monkeypatch.setenv("HALO_DATA_DIR", str(tmp_path))
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        start = stack_processes.process_start_id(stranger.pid)
        assert start is not None
        stack_state.save_state(
            stack_state.StackState(
                redis_url=REDIS_URL,
                processes=[
                    stack_processes.ProcessRecord("sites", mine.pid, stack_processes.process_start_id(mine.pid)),
                    # the pid a trainer once had, now another program's: its start time differs
                    stack_processes.ProcessRecord("trainer", stranger.pid, start - 1),
                ],
            )
        )
        said: list[str] = []
        stack.down(say=said.append)
        # `down` reaped it (the test process is its parent): gone is what matters
        assert mine.poll() is not None and not Path(f"/proc/{mine.pid}").exists()
        assert stranger.poll() is None
        assert f"  trainer  pid {stranger.pid} gone (exited, or the pid is another program's now): left alone" in said
        assert f"  sites    stopped (pid {mine.pid})" in said
        assert not stack_state.state_path().exists()
    finally:
        for proc in (mine, stranger):
            proc.kill()
            proc.wait()


def test_state_files_without_start_ids_match_by_command_line(tmp_path, monkeypatch):
    """A state file written before start times were recorded: its processes are still stopped."""
    monkeypatch.setenv("HALO_DATA_DIR", str(tmp_path))
    sites = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "halo_sites"], start_new_session=True
    )
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        legacy = {
            "redis_url": REDIS_URL,
            "redis_pid": None,
            "services": [
                {"name": "sites", "url": "", "pid": sites.pid, "log": None, "started_by_stack": True},
                {"name": "env", "url": "", "pid": other.pid, "log": None, "started_by_stack": True},
                {"name": "reward", "url": "", "pid": None, "log": None, "started_by_stack": False},
            ],
        }
        stack_state.state_path().parent.mkdir(parents=True)
        stack_state.state_path().write_text(json.dumps(legacy))
        stack.down(say=lambda _: None)
        assert sites.poll() is not None and not Path(f"/proc/{sites.pid}").exists()
        assert other.poll() is None  # its command line is not the env service's
    finally:
        for proc in (sites, other):
            proc.kill()
            proc.wait()


class _HttpStub(ServedInThread):
    """Another program on a port: answers every GET with 404 and remembers the paths."""

    def __init__(self) -> None:
        stub = self
        self.paths: list[str] = []

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                stub.paths.append(self.path)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        super().__init__(Handler)


# -- each checkout's stack on a Redis of its own -------------------------------------------------------
def _checkout_env(data_dir: Path, reward_port: int) -> dict[str, str]:
    """A checkout that names no Redis (what `make train` on a fresh clone does)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HALO_REDIS_URL", "HALO_STACK_REDIS_PORT")}
    return {**env, "HALO_DATA_DIR": str(data_dir), "HALO_REWARD_PORT": str(reward_port)}


def _halo(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([*HALO, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.slow
def test_two_checkouts_stacks_each_run_their_own_redis(tmp_path):
    """Two checkouts' stacks, one after the other on one machine with a Redis already running: each
    starts a redis-server of its own (not the machine's), its services get that one, neither sees
    the other's keys; after `down` and `up` a checkout is back on its recorded port with its data,
    and a recorded port another program took meanwhile is replaced by a free one."""
    checkouts = {name: tmp_path / name for name in ("first", "second")}
    envs = {name: _checkout_env(root / "var", free_port()) for name, root in checkouts.items()}
    for root in checkouts.values():
        root.mkdir()
    urls = {}
    try:
        for name, root in checkouts.items():
            out = _halo(envs[name], root, "stack", "up", "-s", "reward")
            assert "the stack's own Redis; starting redis-server on port" in out, out
            urls[name] = json.loads((root / "var" / "stack" / "stack.json").read_text())["redis_url"]
            [reward] = _record(root / "var", "reward")
            assert _environ_of(reward["pid"])["HALO_REDIS_URL"] == urls[name]
        assert len({*urls.values(), "redis://127.0.0.1:6379/0"}) == 3, urls
        first = redis.Redis.from_url(urls["first"])
        first.set("halo:test:whose", "first")
        assert redis.Redis.from_url(urls["second"]).get("halo:test:whose") is None
        assert Path(first.config_get("dir")["dir"]) == (checkouts["first"] / "var" / "stack" / "redis").resolve()

        _halo(envs["first"], checkouts["first"], "stack", "down")
        assert not redis_reachable(urls["first"])
        assert redis.Redis.from_url(urls["second"]).ping()  # the other checkout's stack is untouched
        again = _halo(envs["first"], checkouts["first"], "stack", "up", "-s", "reward")
        assert f"port {urls['first'].rsplit(':', 1)[1].split('/')[0]}" in again
        assert redis.Redis.from_url(urls["first"]).get("halo:test:whose") == b"first"  # its data survived

        _halo(envs["first"], checkouts["first"], "stack", "down")
        port = int(urls["first"].rsplit(":", 1)[1].split("/")[0])
        with socket.socket() as taken:  # another program on the recorded port meanwhile
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the last one's TIME_WAIT
            taken.bind(("127.0.0.1", port))
            taken.listen()
            _halo(envs["first"], checkouts["first"], "stack", "up", "-s", "reward")
            moved = json.loads((checkouts["first"] / "var" / "stack" / "stack.json").read_text())["redis_url"]
        assert moved != urls["first"] and redis.Redis.from_url(moved).get("halo:test:whose") == b"first"
        assert (checkouts["first"] / "var" / "stack" / "redis" / "port").read_text().strip() == moved.split(":")[2][:-2]
    finally:
        for name, root in checkouts.items():
            subprocess.run([*HALO, "stack", "down"], env=envs[name], cwd=root, capture_output=True, timeout=120)
    for root in checkouts.values():
        assert not _processes_of(root / "var")


def test_cluster_commands_get_the_running_stacks_redis_unless_one_is_named(tmp_path, monkeypatch):
    from halo.cli.stack_redis import child_env
    from halo.settings import HaloSettings

    monkeypatch.delenv("HALO_REDIS_URL", raising=False)
    assert "HALO_REDIS_URL" not in child_env(HaloSettings(data_dir=tmp_path))  # no stack: nothing to pass
    stack_state.save_state(
        stack_state.StackState(redis_url="redis://127.0.0.1:4242/0"), HaloSettings(data_dir=tmp_path)
    )
    assert child_env(HaloSettings(data_dir=tmp_path))["HALO_REDIS_URL"] == "redis://127.0.0.1:4242/0"
    named = HaloSettings(data_dir=tmp_path, redis_url="redis://10.0.0.1:6379/0")
    assert "HALO_REDIS_URL" not in child_env(named)  # the user's choice reaches the child through its own environment
