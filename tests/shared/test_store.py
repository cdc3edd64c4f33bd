"""The data plane (``halo.store``) with real processes: a node's probe check as its own process over
two folders that share (one reached through a link) and two that do not, and the head's data server
as a real HTTP process that a node's screenshot store and adapter copies go through."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from halo.screenshots import ScreenshotStore
from halo.store import HttpStore, SharedFsStore, StoreRefused, StoreUnavailable, check_probe, write_probe
from halo.store.base import screenshot_path
from tests.cluster.data_server import serve_data
from tests.conftest import free_port, noise_png, stop_services

TOKEN = "t" * 64


def node_check(data_dir: Path, probe: str, **store_env: str) -> subprocess.CompletedProcess:
    """``python -m halo.store check`` as a node runs it: its own process, its own environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALO_STORE_")}
    env |= {"HALO_DATA_DIR": str(data_dir), "COLUMNS": "400", **store_env}  # rich wraps at the width
    return subprocess.run(
        [sys.executable, "-m", "halo.store", "check", probe], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_a_node_sees_the_heads_folder_only_when_it_is_the_same_folder(tmp_path: Path) -> None:
    head, other = tmp_path / "head", tmp_path / "node-own"
    other.mkdir()
    probe = write_probe(head)
    (tmp_path / "mount").symlink_to(head)  # the same folder under another name: a mount

    assert node_check(head, probe).returncode == 0
    assert node_check(tmp_path / "mount", probe).returncode == 0

    refused = node_check(other, probe)
    assert refused.returncode == 1
    said = " ".join(refused.stderr.split())
    assert f"{other}/cluster/store-probe does not exist here" in said, said
    assert "HALO_STORE_BACKEND=http" in said and "Traceback" not in refused.stderr

    write_probe(other)  # another head's folder at the same path
    stale = node_check(other, probe)
    assert stale.returncode == 1 and "sees another data folder than the head's" in " ".join(stale.stderr.split())


def test_the_probe_check_names_the_path_and_the_value() -> None:
    with pytest.raises(StoreRefused, match=r"/nowhere/cluster/store-probe does not exist here .*abcdef12\.\.\."):
        check_probe(SharedFsStore(Path("/nowhere")), "abcdef1234")


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory):
    """The head's data folder (a probe, a screenshot, an adapter, tokens that must never be served)
    and its data server as a real process."""
    root = tmp_path_factory.mktemp("head")
    probe = write_probe(root)
    png = noise_png(32, 24, seed=1)
    ScreenshotStore(root / "screenshots").put(png)
    adapter = root / "runs" / "r1" / "adapters" / "v3"
    (adapter / "sub").mkdir(parents=True)
    (adapter / "adapter_config.json").write_text('{"r": 8}')
    (adapter / "adapter_model.safetensors").write_bytes(os.urandom(300_000))
    (adapter / "sub" / "extra.bin").write_bytes(b"x" * 10)
    (root / "cluster" / "ray_token").write_text("secret")
    (root / "stack").mkdir()
    (root / "stack" / "trainer-token").write_text("secret")
    proc, url = serve_data(root, TOKEN)
    yield {"root": root, "url": url, "probe": probe, "png": png, "proc": proc}
    stop_services([proc])


@pytest.mark.slow
def test_a_node_without_the_heads_folder_passes_the_probe_over_http(head, tmp_path: Path) -> None:
    env = {"HALO_STORE_BACKEND": "http", "HALO_STORE_HEAD_URL": head["url"], "HALO_STORE_TOKEN": TOKEN}
    assert node_check(tmp_path, head["probe"], **env).returncode == 0, "the probe over HTTP failed"

    wrong = node_check(tmp_path, head["probe"], **(env | {"HALO_STORE_TOKEN": "wrong"}))
    assert wrong.returncode == 1 and "refused" in wrong.stderr and "401" in wrong.stderr

    gone = node_check(tmp_path, head["probe"], **(env | {"HALO_STORE_HEAD_URL": f"http://127.0.0.1:{free_port()}"}))
    assert gone.returncode == 1 and "did not answer" in gone.stderr and "Traceback" not in gone.stderr


def test_the_server_answers_only_with_the_token_and_only_the_served_areas(head) -> None:
    rel = screenshot_path(hashlib.sha256(head["png"]).hexdigest())
    assert httpx.get(f"{head['url']}/v1/files/{rel}").status_code == 401
    assert httpx.get(f"{head['url']}/v1/files/{rel}", headers={"Authorization": "Bearer nope"}).status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{head['url']}/v1/files/{rel}", headers=auth).content == head["png"]
    for secret in ("cluster/ray_token", "stack/trainer-token", "screenshots/../cluster/ray_token"):
        answer = httpx.get(f"{head['url']}/v1/files/{secret}", headers=auth)
        assert answer.status_code in (400, 404) and b"secret" not in answer.content, secret
    # Encoded traversal reaches the route as '..' parts and is refused by name.
    answer = httpx.get(f"{head['url']}/v1/files/screenshots/%2E%2E/cluster/ray_token", headers=auth)
    assert answer.status_code in (400, 404) and b"secret" not in answer.content


def test_a_nodes_screenshots_reach_the_head_and_the_heads_reach_the_node(head, tmp_path: Path) -> None:
    remote = HttpStore(head["url"], TOKEN, tmp_path)
    node = ScreenshotStore(tmp_path / "screenshots", remote=remote)
    heads_sha = hashlib.sha256(head["png"]).hexdigest()
    assert not node.path(heads_sha).exists()
    assert node.get(heads_sha) == head["png"]  # fetched from the head, then kept here
    assert node.path(heads_sha).exists()

    taken = noise_png(40, 30, seed=2)
    sha = node.put(taken)
    assert (head["root"] / screenshot_path(sha)).read_bytes() == taken  # the learner's folder has it
    assert node.put(taken) == sha  # again: a no-op on both sides

    with pytest.raises(FileNotFoundError):
        node.get("0" * 64)
    assert not node.exists("0" * 64)
    remote.close()


def test_an_upload_can_only_add_a_screenshot_under_its_own_hash(head, tmp_path: Path) -> None:
    remote = HttpStore(head["url"], TOKEN, tmp_path)
    png = noise_png(8, 8, seed=3)
    liar = screenshot_path(hashlib.sha256(b"other").hexdigest())
    with pytest.raises(ValueError, match="hash to"):
        remote.write_new(liar, png)
    assert not (head["root"] / liar).exists()
    with pytest.raises(ValueError, match="only screenshots"):
        remote.write_new("runs/r1/adapters/v3/adapter_config.json", b"{}")
    assert (head["root"] / "runs/r1/adapters/v3/adapter_config.json").read_text() == '{"r": 8}'
    with pytest.raises(ValueError, match="without '.' or '..'"):
        remote.read_bytes("screenshots/../cluster/ray_token")
    remote.close()


def test_an_adapter_folder_is_copied_whole_to_the_same_relative_path(head, tmp_path: Path) -> None:
    remote = HttpStore(head["url"], TOKEN, tmp_path)
    folder = remote.local_dir("runs/r1/adapters/v3")
    source = head["root"] / "runs/r1/adapters/v3"
    assert folder == tmp_path / "runs/r1/adapters/v3"
    copied = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert copied == {p.relative_to(source): p.read_bytes() for p in source.rglob("*") if p.is_file()}
    assert not [p for p in folder.parent.iterdir() if ".partial-" in p.name]
    with pytest.raises(FileNotFoundError):
        remote.local_dir("runs/r1/adapters/v9")
    remote.close()


def test_the_shared_fs_backend_reads_the_folder_in_place(head) -> None:
    store = SharedFsStore(head["root"])
    assert store.local_dir("runs/r1/adapters/v3") == head["root"] / "runs/r1/adapters/v3"
    check_probe(store, head["probe"])
    with pytest.raises(StoreRefused, match="another data folder"):
        check_probe(store, "f" * 32)


@pytest.mark.slow
def test_a_node_process_screenshot_store_uploads_through_the_settings(head, tmp_path: Path) -> None:
    """``screenshot_store`` (what the env service opens) in a node's own process, configured only by
    its environment, adds the screenshot to the head's folder."""
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from halo.screenshots import screenshot_store
        print(screenshot_store(Path(sys.argv[1])).put(bytes.fromhex(sys.argv[2])))
        """
    )
    png = noise_png(16, 16, seed=4)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALO_STORE_")}
    env |= {"HALO_STORE_BACKEND": "http", "HALO_STORE_HEAD_URL": head["url"], "HALO_STORE_TOKEN": TOKEN}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "shots"), png.hex()],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    sha = done.stdout.strip()
    assert (head["root"] / screenshot_path(sha)).read_bytes() == png


def test_an_unreachable_head_is_a_clear_error(tmp_path: Path) -> None:
    remote = HttpStore(f"http://127.0.0.1:{free_port()}", TOKEN, tmp_path, timeout_s=2.0)
    with pytest.raises(StoreUnavailable, match="did not answer GET screenshots/"):
        remote.read_bytes(screenshot_path("a" * 64))
    with pytest.raises(ValueError, match="HALO_STORE_HEAD_URL"):
        HttpStore("10.0.0.1:6381", TOKEN, tmp_path)
