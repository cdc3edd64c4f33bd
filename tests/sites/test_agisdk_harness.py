"""agisdk's own harness, unmodified, runs REAL v2 tasks on the clones and judges them SUCCESS.

What a user does to point an agisdk agent at the clones (docs/sites.md), done here in a subprocess:
the clone server and ``halo_sites.real_proxy`` running, ``https_proxy`` set to the proxy, the proxy's
CA trusted by Chromium (an NSS database under the subprocess's HOME), and, on machines where
Playwright cannot download its browser, ``PLAYWRIGHT_BROWSERS_PATH`` holding a link to the system
Chromium. agisdk then opens REAL's own URLs, calls ``/config?task_id=v2.<name>``, and a scripted
agent replays the task's reference solution; agisdk's evaluator reads ``/finish``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from halo_sites.tasks import REAL_PREFIX, SOLUTIONS_DIR, load_tasks, real_site_hosts, resolve_task_id
from tests.conftest import free_port
from tests.sites.conftest import CHROMIUM

AGENT = Path(__file__).with_name("agisdk_harness_agent.py")
WRONG_DIR = Path(__file__).parent / "wrong_solutions"


def first_real_task_per_site() -> list[str]:
    firsts: dict[str, str] = {}
    for task in load_tasks():
        if task.id.startswith(REAL_PREFIX):
            firsts.setdefault(task.domain, task.id)  # load_tasks orders each site's tasks by number
    return sorted(firsts.values())


def test_config_takes_reals_own_task_ids() -> None:
    assert resolve_task_id("v2.omnizon-25") == "real-offline.omnizon-25"
    assert resolve_task_id("local.omnizon-3") == "local.omnizon-3"
    assert resolve_task_id("real-offline.zilloft-23") == "real-offline.zilloft-23"


def test_every_real_site_has_its_hosts() -> None:
    sites = {t.domain for t in load_tasks() if t.id.startswith(REAL_PREFIX)}
    assert set(real_site_hosts().values()) == sites
    assert all(host.endswith(".vercel.app") for host in real_site_hosts())


def test_a_real_host_is_served_as_its_site(sites_url: str) -> None:
    host, site = next(iter(real_site_hosts().items()))
    name = next(t for t in first_real_task_per_site() if t.startswith(f"{REAL_PREFIX}{site}-")).removeprefix(
        REAL_PREFIX
    )
    with httpx.Client(base_url=sites_url, headers={"Host": host}) as client:
        config = client.get("/config", params={"run_id": "0", "task_id": f"v2.{name}", "latency": "0"})
        assert config.status_code == 200 and f"{REAL_PREFIX}{name}" in config.text
        assert client.get("/").text == httpx.get(f"{sites_url}/{site}/").text
        # agisdk joins its url (ending in a slash) and "/finish": the path starts with two slashes.
        finish = client.send(client.build_request("GET", httpx.URL(sites_url).copy_with(raw_path=b"//finish")))
        assert "<pre id='finish'>" in finish.text
        assert client.get(f"/{site}/static/data.js").status_code == 200
    # Without REAL's host, the clone server's own paths are unchanged.
    assert httpx.get(f"{sites_url}/config").status_code == 404


@pytest.fixture(scope="module")
def proxy(sites_url: str, tmp_path_factory) -> Iterator[dict[str, str]]:
    """The proxy as a process, and the environment a user sets for agisdk's harness."""
    if not shutil.which(CHROMIUM) or not shutil.which("certutil"):
        pytest.skip("needs Chromium and certutil (scripts/setup.sh installs both)")
    root = tmp_path_factory.mktemp("agisdk")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "halo_sites.real_proxy", "--sites-url", sites_url, "--port", str(port)]
        + ["--ca-dir", str(root / "ca")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not (root / "ca" / "leaf.pem").is_file() or _closed(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the proxy did not start: {process.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
        home = root / "home"
        nssdb = f"sql:{home / '.pki' / 'nssdb'}"
        (home / ".pki" / "nssdb").mkdir(parents=True)
        subprocess.run(["certutil", "-d", nssdb, "-N", "--empty-password"], check=True)
        ca = str(root / "ca" / "ca.pem")
        subprocess.run(["certutil", "-d", nssdb, "-A", "-t", "C,,", "-n", "halo-real", "-i", ca], check=True)
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env |= {"HOME": str(home), "https_proxy": f"http://127.0.0.1:{port}", "no_proxy": "127.0.0.1,localhost"}
        env |= {"PLAYWRIGHT_BROWSERS_PATH": str(system_chromium_for_playwright(root / "browsers"))}
        yield env
    finally:
        process.terminate()
        process.wait(timeout=10)


def _closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def system_chromium_for_playwright(folder: Path) -> Path:
    """A Playwright browsers folder whose headless shell is the system Chromium (Playwright's own
    download cannot run here); the layout is the installed Playwright's."""
    import playwright

    driver = Path(playwright.__file__).parent / "driver" / "package"
    revision = next(b["revision"] for b in json.loads((driver / "browsers.json").read_text())["browsers"])
    shell = folder / f"chromium_headless_shell-{revision}" / "chrome-headless-shell-linux64" / "chrome-headless-shell"
    shell.parent.mkdir(parents=True)
    shell.symlink_to(CHROMIUM)
    return folder


def run_harness(env: dict[str, str], task_id: str, solution: Path, results: Path) -> dict:
    name = "v2." + task_id.removeprefix(REAL_PREFIX)
    done = subprocess.run(
        [sys.executable, str(AGENT), name, str(solution), str(results)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{name}: {done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


# `make test` runs two sites' first tasks (about 30 s each); `make test-replay` every site's.
IN_MAKE_TEST = {"real-offline.omnizon-3", "real-offline.zilloft-2"}


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize(
    "task_id",
    [pytest.param(t, marks=() if t in IN_MAKE_TEST else pytest.mark.full_replay) for t in first_real_task_per_site()],
)
def test_agisdks_harness_solves_a_task_of_every_site(proxy: dict[str, str], task_id: str, tmp_path: Path) -> None:
    record = run_harness(proxy, task_id, SOLUTIONS_DIR / f"{task_id}.json", tmp_path)
    assert record["cum_reward"] == 1.0 and record["err_msg"] is None, f"{task_id}: {record}"


@pytest.mark.slow
@pytest.mark.browser
def test_agisdks_harness_fails_the_wrong_solution(proxy: dict[str, str], tmp_path: Path) -> None:
    task_id = "real-offline.omnizon-25"
    record = run_harness(proxy, task_id, WRONG_DIR / f"{task_id}.json", tmp_path)
    assert record["cum_reward"] == 0.0 and record["err_msg"] is None, f"{task_id}: {record}"
