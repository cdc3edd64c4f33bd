"""Session leases on a real env service with real Chromium: the sessions of an owner process that
is SIGKILLed are closed within the lease TTL plus one sweep; a live owner's are kept; unleased
sessions keep the idle TTL; forks inherit the lease; the session count returns to the live ones."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.env.fixtures import EnvServer, FixtureBackend, client, settings_for
from tests.env.helpers import create

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TTL_S = 3.0
# Generous page timeouts: these tests are about leases, and a loaded machine slows screenshots.
SLACK = {"action_timeout_s": 10.0, "navigation_timeout_s": 20.0, "step_timeout_s": 20.0}
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(site, tmp_path: Path) -> Iterator[EnvServer]:
    # The idle reaper is far away (600 s): only the lease may close anything here.
    settings = settings_for(tmp_path, lease_ttl_s=TTL_S, session_ttl_s=600, reap_interval_s=600, **SLACK)
    with EnvServer(settings, [FixtureBackend(site.url)]) as s:
        yield s


def _owner(url: str, name: str, *extra: str) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.env.lease_owner", url, name, *extra],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    assert line, f"lease owner {name} exited with {proc.wait()}"
    return proc, json.loads(line)


@contextlib.contextmanager
def _beating(url: str, lease_id: str) -> Iterator[None]:
    """Heartbeat the lease from a thread, as a worker's keeper task does, while inside."""
    stop = threading.Event()

    def beat() -> None:
        with httpx.Client(base_url=url, timeout=10) as http:
            while not stop.wait(0.5):
                http.post(f"/leases/{lease_id}/heartbeat")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _open(http: httpx.Client) -> set[str]:
    return {s["session_id"] for s in http.get("/sessions").json()}


def test_a_killed_owners_sessions_close_within_the_lease_ttl(server: EnvServer) -> None:
    with client(server) as http:
        unleased = create(http)["observation"]["session_id"]
        alive, alive_info = _owner(server.url, "alive-worker")
        doomed, doomed_info = _owner(server.url, "doomed-worker")
        try:
            listed = {s["session_id"]: s["lease_id"] for s in http.get("/sessions").json()}
            for info in (alive_info, doomed_info):
                assert len(info["sessions"]) == 3  # a reset and its two forks: the forks inherit the lease
                assert {listed[sid] for sid in info["sessions"]} == {info["lease_id"]}
            assert listed[unleased] is None
            assert http.get("/stats").json()["sessions"] == 7

            doomed.kill()  # SIGKILL: no goodbye, the heartbeat just stops
            killed_at = time.monotonic()
            doomed.wait()
            deadline = killed_at + TTL_S + 10
            while set(doomed_info["sessions"]) & _open(http) and time.monotonic() < deadline:
                time.sleep(0.1)
            released_after = time.monotonic() - killed_at
            print(f"\nsessions of the killed owner closed {released_after:.2f} s after SIGKILL (ttl {TTL_S} s)")
            assert not set(doomed_info["sessions"]) & _open(http), "the dead owner's sessions are still open"
            # Not sooner than the TTL after the last heartbeat (at most a quarter TTL before the kill).
            assert released_after >= TTL_S * 0.75 - 0.25

            # The live owner keeps its sessions well past the TTL; the unleased session keeps its idle TTL.
            time.sleep(2 * TTL_S)
            assert _open(http) == set(alive_info["sessions"]) | {unleased}
            stats = http.get("/stats").json()
            assert stats["sessions"] == 4 and stats["contexts_in_use"] == 4
            assert stats["leases"] == 1 and stats["leased_sessions"] == 3
            r = http.post(
                f"/sessions/{doomed_info['sessions'][0]}/step", json={"action": {"action": "wait", "time": 0}}
            )
            assert r.status_code == 404

            # A graceful exit releases the lease at once.
            alive.stdin.close()
            assert alive.wait(30) == 0
            assert _open(http) == {unleased}
            assert http.get("/leases").json() == []
        finally:
            for proc in (alive, doomed):
                proc.kill()
                proc.wait()


def test_a_killed_owners_restored_session_closes_within_the_lease_ttl(server: EnvServer) -> None:
    """A session restored from a snapshot (an MCTS search re-entering a node) belongs to the
    restoring client's lease like a reset's, so it goes when its owner is SIGKILLed."""
    with client(server) as http:
        doomed, info = _owner(server.url, "searching-worker", "restore")
        try:
            restored = info["sessions"][-1]
            listed = {s["session_id"]: s["lease_id"] for s in http.get("/sessions").json()}
            assert len(info["sessions"]) == 4 and listed[restored] == info["lease_id"]
            doomed.kill()
            killed_at = time.monotonic()
            doomed.wait()
            while set(info["sessions"]) & _open(http) and time.monotonic() < killed_at + TTL_S + 10:
                time.sleep(0.1)
            released_after = time.monotonic() - killed_at
            print(f"\nthe killed owner's restored session closed {released_after:.2f} s after SIGKILL (ttl {TTL_S} s)")
            assert restored not in _open(http) and not set(info["sessions"]) & _open(http)
            assert released_after < TTL_S + 10 and http.get("/leases").json() == []
        finally:
            doomed.kill()
            doomed.wait()

        # Restoring under a lease the env does not know is refused before a context is taken.
        sid = create(http)["observation"]["session_id"]
        snapshot = http.get(f"/sessions/{sid}/snapshot").json()
        in_use = http.get("/stats").json()["contexts_in_use"]
        r = http.post("/sessions/restore", params={"lease_id": "lease-0000000000"}, json=snapshot)
        assert r.status_code == 404 and "unknown lease" in r.json()["error"]
        assert http.get("/stats").json()["contexts_in_use"] == in_use
        assert http.post("/sessions/restore", params={"lease_id": "../x"}, json=snapshot).status_code == 422


def test_lease_routes_and_refusals(server: EnvServer) -> None:
    with client(server) as http:
        http.delete(f"/sessions/{create(http)['observation']['session_id']}")  # launch the browser first
        lease = http.post("/leases", json={"owner": "test"}).json()
        assert lease["ttl_s"] == TTL_S and lease["sessions"] == 0
        lid = lease["lease_id"]
        with _beating(server.url, lid):
            sid = create(http, lease_id=lid)["observation"]["session_id"]
            beat = http.post(f"/leases/{lid}/heartbeat").json()
            assert beat["sessions"] == 1 and beat["renewed_at"] >= lease["renewed_at"]

        # Unknown leases: a clear 404, and no browser context is taken for the refused session.
        in_use = http.get("/stats").json()["contexts_in_use"]
        r = http.post("/sessions", json={"task_id": "fixture.actions", "lease_id": "lease-0000000000"})
        assert r.status_code == 404 and "unknown lease" in r.json()["error"]
        assert http.get("/stats").json()["contexts_in_use"] == in_use
        assert http.post("/leases/lease-0000000000/heartbeat").status_code == 404
        assert http.delete("/leases/lease-0000000000").status_code == 404
        assert http.post("/leases", json={"owner": ""}).status_code == 422
        assert http.post("/sessions", json={"task_id": "fixture.actions", "lease_id": "../x"}).status_code == 422

        # An expired lease is gone for good: heartbeats and new sessions under it are refused.
        time.sleep(TTL_S + 1.5)
        assert http.post(f"/leases/{lid}/heartbeat").status_code == 404
        assert sid not in _open(http)
        r = http.post("/sessions", json={"task_id": "fixture.actions", "lease_id": lid})
        assert r.status_code == 404

        # DELETE releases the lease and closes its sessions.
        lid = http.post("/leases", json={"owner": "test"}).json()["lease_id"]
        with _beating(server.url, lid):
            sid = create(http, lease_id=lid)["observation"]["session_id"]
            fork = http.post(f"/sessions/{sid}/fork", json={"n": 1}).json()
            child = fork["sessions"][0]["observation"]["session_id"]
        assert http.delete(f"/leases/{lid}").json() == {"schema_version": 1, "lease_id": lid, "sessions_closed": 2}
        assert not {sid, child} & _open(http)
        assert http.get("/stats").json()["contexts_in_use"] == 0


def test_leased_sessions_are_not_reaped_for_idling(site, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, lease_ttl_s=TTL_S, session_ttl_s=1.0, reap_interval_s=0.3, **SLACK)
    with EnvServer(settings, [FixtureBackend(site.url)]) as server, client(server) as http:
        idle = create(http)["observation"]["session_id"]  # also launches the browser
        lid = http.post("/leases", json={"owner": "test"}).json()["lease_id"]
        with _beating(server.url, lid):
            leased = create(http, lease_id=lid)["observation"]["session_id"]
            time.sleep(4)  # four idle TTLs without a use of the session
            assert http.get("/leases").json()[0]["sessions"] == 1
        assert _open(http) == {leased}, "the unleased session is reaped, the leased one kept"
        assert idle not in _open(http)


def test_the_client_replaces_a_lost_lease_and_keeps_one(server: EnvServer) -> None:
    """EnvClient.hold_lease: a lease the env forgot (expired, env restarted) is replaced once, by the
    refused reset or by the heartbeat task, and sessions go on being created under the new one."""
    from halo.clients import EnvClient

    async def scenario() -> None:
        async with EnvClient(server.url) as env, env.hold_lease("client-test"):
            first = env.lease_id
            assert first is not None
            with client(server) as http:
                http.delete(f"/leases/{first}")  # as if it had expired
            reset = await env.reset("fixture.actions")  # refused under the lost lease, retried once
            second = env.lease_id
            assert second not in (None, first)
            await asyncio.sleep(TTL_S + 1.5)  # the heartbeat task keeps the new lease alive
            with client(server) as http:
                listed = {s["session_id"]: s["lease_id"] for s in http.get("/sessions").json()}
                assert listed[reset.observation.session_id] == second
                assert [le["lease_id"] for le in http.get("/leases").json()] == [second]
        with client(server) as http:  # leaving hold_lease released it and closed its session
            assert http.get("/leases").json() == [] and http.get("/sessions").json() == []

    asyncio.run(scenario())
