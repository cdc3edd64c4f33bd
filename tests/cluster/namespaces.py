"""Several "machines" on one: network namespaces joined by a bridge, for the cluster's release tier.

Each node is a network namespace with its own address, ports and loopback, joined to the others
by a veth pair into one bridge; the bridge has an address of its own, so the test (in the root
namespace) reaches every node like an operator's machine on the same network. The filesystem and
the process table stay shared: a folder written on one node is seen on all (the shared-filesystem
data plane), and a node's processes are found with ``ip netns pids``.

Everything made here is removed by ``close`` (a context manager calls it on every exit path):
the processes still running in the namespaces (SIGKILL, by pid: they are this test's, since the
namespaces are), the namespaces, the bridge, and the forwarding rule. Names carry the creating
process's id, so two test sessions on one machine never share a device.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest


class NamespaceError(RuntimeError):
    """The machine cannot make network namespaces (not root, no ``ip``), said in words."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NamespaceError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def unavailable() -> str:
    """Why namespaces cannot be made here ("" when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    return ""


@dataclass
class Node:
    name: str  # the namespace's name
    address: str  # its address on the bridge
    host_link: str  # the veth end on the bridge (down = the node is cut off)


class OpenedUntilClosed:
    """``with thing:`` opens it and closes it on every exit path, a failed ``open`` included (what it
    made before failing is removed)."""

    def __enter__(self):
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Namespaces(OpenedUntilClosed):
    """``count`` nodes ``<tag>n0..`` on ``10.<a>.<b>.1..`` and a bridge at ``.254`` of the same /24."""

    count: int
    tag: str = field(default_factory=lambda: f"hn{os.getpid() % 100000}")
    nodes: list[Node] = field(default_factory=list)
    _forward_rule: list[str] | None = None
    _made: list[tuple[str, str]] = field(default_factory=list)  # ("netns"|"link", name), in order

    def __post_init__(self) -> None:
        pid = os.getpid()
        self.prefix = f"10.{200 + pid % 50}.{pid // 50 % 250}"
        self.bridge = f"{self.tag}br"
        self.bridge_address = f"{self.prefix}.254"

    # -- lifecycle ---------------------------------------------------------------------------------
    def open(self) -> None:
        if why := unavailable():
            raise NamespaceError(why)
        _ip("link", "add", self.bridge, "type", "bridge")
        self._made.append(("link", self.bridge))
        _ip("addr", "add", f"{self.bridge_address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index in range(self.count):
            name, host_link, peer = f"{self.tag}n{index}", f"{self.tag}v{index}", f"{self.tag}p{index}"
            _ip("netns", "add", name)
            self._made.append(("netns", name))
            _ip("link", "add", host_link, "type", "veth", "peer", "name", peer)
            self._made.append(("link", host_link))
            _ip("link", "set", host_link, "master", self.bridge, "up")
            _ip("link", "set", peer, "netns", name)
            _ip("-n", name, "link", "set", peer, "name", "eth0")
            address = f"{self.prefix}.{index + 1}"
            _ip("-n", name, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
            _ip("-n", name, "link", "set", "lo", "up")
            self.nodes.append(Node(name, address, host_link))
        # Once a Docker engine has run, the FORWARD policy is DROP and bridged traffic (through
        # br_netfilter) times out: let this bridge's own traffic through, and only it.
        if shutil.which("iptables"):
            rule = ["FORWARD", "-i", self.bridge, "-o", self.bridge, "-j", "ACCEPT"]
            if subprocess.run(["iptables", "-I", *rule], capture_output=True).returncode == 0:
                self._forward_rule = rule

    def close(self) -> None:
        """Kill what runs in the namespaces, then remove every device and namespace made here."""
        for node in self.nodes:
            self.kill_all(node)
        for kind, name in reversed(self._made):
            if kind == "netns":
                _ip("netns", "del", name, check=False)
            else:
                _ip("link", "del", name, check=False)
        self._made.clear()
        if self._forward_rule:
            subprocess.run(["iptables", "-D", *self._forward_rule], capture_output=True)
            self._forward_rule = None

    # -- running things on a node ------------------------------------------------------------------
    def popen(self, node: Node, argv: Sequence[str], *, env: dict[str, str], log: Path, **kw) -> subprocess.Popen:
        """``argv`` on ``node``, in a process group of its own, output appended to ``log``."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            return subprocess.Popen(
                ["ip", "netns", "exec", node.name, *argv],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **kw,
            )

    def run(
        self, node: Node, argv: Sequence[str], *, env: dict[str, str], timeout: float = 300
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ip", "netns", "exec", node.name, *argv], env=env, capture_output=True, text=True, timeout=timeout
        )

    @staticmethod
    def pids(node: Node) -> list[int]:
        done = _ip("netns", "pids", node.name, check=False)
        return [int(word) for word in done.stdout.split()]

    def kill_all(self, node: Node, timeout_s: float = 10.0) -> int:
        """SIGKILL every process in ``node`` (a machine losing power); returns how many were killed."""
        killed: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while (pids := self.pids(node)) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
            time.sleep(0.2)
        return len(killed)

    @staticmethod
    def link(node: Node, up: bool) -> None:
        """Cut ``node`` off the bridge (``up=False``) or plug it back: a network partition."""
        _ip("link", "set", node.host_link, "up" if up else "down")


def namespace_marks() -> list[pytest.MarkDecorator]:
    """The marks of every scenario of the tier: a release test needing root, vLLM and Chromium,
    skipped with the reason where namespaces cannot be made."""
    return [
        pytest.mark.slow,
        pytest.mark.release,
        pytest.mark.namespaces,
        pytest.mark.vllm,
        pytest.mark.browser,
        pytest.mark.skipif(bool(unavailable()), reason=unavailable() or "namespaces available"),
    ]
