"""A Slurm cluster whose nodes are network namespaces, started for real: Debian's `slurm-wlm`
(slurmctld, one slurmd per node) and `munge`, for submitting `deploy/slurm/halo.sbatch` unchanged.

    this machine   munged (a key and a socket of its own in the cluster's folder), slurmctld on the
                   bridge's address
    each node      slurmd -N <node>, entered into the node's network namespace only (`nsenter
                   --net`, not `ip netns exec`, which mounts a sysfs of its own and hides the cgroup
                   tree slurmd needs), so every job step on it runs with the node's address

Steps are tracked by cgroup (`proctrack/cgroup`, as production clusters do): `scancel` ends a
step's every process, a daemonised one included. Everything runs as root (namespaces, slurmd);
`close` stops the daemons and the namespaces' helper removes the rest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.cluster.namespace_cluster import _wait
from tests.cluster.namespaces import Namespaces, OpenedUntilClosed

SLURMCTLD_PORT, SLURMD_PORT = 6917, 6918  # not Slurm's defaults: a site's own Slurm keeps its ports
PACKAGES = ("slurmctld", "slurmd", "sbatch", "munged")


def unavailable() -> str:
    """Why a Slurm cluster cannot be started here ("" when it can)."""
    missing = [name for name in PACKAGES if shutil.which(name) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge; make test-slurm does it)"
    if shutil.which("nsenter") is None:
        return "nsenter (util-linux) is not installed"
    return ""


@dataclass
class SlurmCluster(OpenedUntilClosed):
    ns: Namespaces
    folder: Path
    cpus_per_node: int = 2
    memory_mb_per_node: int = 6000
    daemons: list[subprocess.Popen] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.folder / "slurm.conf"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a Slurm command of this cluster runs with (``SLURM_CONF`` names it)."""
        return {**os.environ, "SLURM_CONF": str(self.conf), **extra}

    # -- lifecycle ---------------------------------------------------------------------------------
    def open(self, timeout_s: float = 60) -> None:
        if why := unavailable():
            raise RuntimeError(why)
        self.folder.mkdir(parents=True, exist_ok=True)
        for sub in ("state", *(f"spool/{n.name}" for n in self.ns.nodes)):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        self._write_conf()
        self._start_munge()
        self.daemons.append(self._daemon(["slurmctld", "-D", "-f", str(self.conf)], "slurmctld.out"))
        for node in self.ns.nodes:
            argv = ["nsenter", f"--net=/run/netns/{node.name}", "slurmd", "-D", "-f", str(self.conf), "-N", node.name]
            self.daemons.append(self._daemon(argv, f"slurmd-{node.name}.out"))
        _wait(
            "every Slurm node idle",
            lambda: (
                len(s := self.node_states()) == len(self.ns.nodes) and all(v.startswith("idle") for v in s.values())
            ),
            timeout_s,
            why=lambda: str(self.node_states()),
        )

    def close(self) -> None:
        for proc in reversed(self.daemons):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.daemons):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        self.daemons.clear()
        pid_file = self.folder / "munged.pid"
        with contextlib.suppress(OSError, ValueError, ProcessLookupError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)

    # -- the pieces --------------------------------------------------------------------------------
    def _write_conf(self) -> None:
        f = self.folder
        nodes = "\n".join(
            f"NodeName={n.name} NodeAddr={n.address} CPUs={self.cpus_per_node} "
            f"RealMemory={self.memory_mb_per_node} State=UNKNOWN"
            for n in self.ns.nodes
        )
        self.conf.write_text(
            f"""ClusterName=halo-namespaces
SlurmctldHost={socket.gethostname()}({self.ns.bridge_address})
SlurmctldPort={SLURMCTLD_PORT}
SlurmdPort={SLURMD_PORT}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={f / "munge.sock"}
ProctrackType=proctrack/cgroup
TaskPlugin=task/none
MailProg=/bin/true
ReturnToService=2
StateSaveLocation={f / "state"}
SlurmdSpoolDir={f / "spool"}/%n
SlurmctldPidFile={f / "slurmctld.pid"}
SlurmdPidFile={f / "slurmd-%n.pid"}
SlurmctldLogFile={f / "slurmctld.log"}
SlurmdLogFile={f / "slurmd-%n.log"}
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
KillWait=10
{nodes}
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        )
        (f / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n")

    def _start_munge(self) -> None:
        key = self.folder / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o600)
        f = self.folder
        argv = ["munged", "--force", f"--socket={f / 'munge.sock'}", f"--key-file={key}"]
        argv += [f"--pid-file={f / 'munged.pid'}", f"--log-file={f / 'munged.log'}", f"--seed-file={f / 'munged.seed'}"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"munged did not start: {done.stderr.strip()}")

    def _daemon(self, argv: list[str], log: str) -> subprocess.Popen:
        with open(self.folder / log, "ab") as out:
            return subprocess.Popen(argv, env=self.env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    # -- asking Slurm ------------------------------------------------------------------------------
    def slurm(self, *argv: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), env=self.env(**env), capture_output=True, text=True, timeout=timeout)

    def node_states(self) -> dict[str, str]:
        done = self.slurm("sinfo", "-N", "-h", "-o", "%N %T")
        return dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)

    def job_state(self, job_id: str) -> str:
        """The job's state (RUNNING, PENDING, ...); "" once slurmctld has forgotten it."""
        done = self.slurm("squeue", "-h", "-j", job_id, "-o", "%T")
        return done.stdout.strip() if done.returncode == 0 else ""

    def steps(self, job_id: str) -> list[str]:
        done = self.slurm("squeue", "-h", "-s", "-j", job_id, "-o", "%i %N")
        return [line.strip() for line in done.stdout.splitlines() if line.strip()]
