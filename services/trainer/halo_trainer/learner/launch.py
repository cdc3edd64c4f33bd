"""``HALO_TRAINER_LEARNER_RANKS=N``: the trainer service as N learner ranks on this machine, and with
``HALO_TRAINER_LEARNER_NODES=M`` on each of M machines.

``python -m halo_trainer`` with N > 1 (or M > 1), and no ``WORLD_SIZE`` of its own, hands itself to
torch's elastic launcher: exactly ``torchrun --standalone --nproc-per-node N -m halo_trainer`` on one
machine, ``torchrun --nnodes M --node-rank K --master-addr <host> --master-port <port> ...`` on each
of several (``HALO_TRAINER_LEARNER_RENDEZVOUS=host:port`` on node 0, ``HALO_TRAINER_LEARNER_NODE_RANK=K``). The launcher
stays as the parent: it gives each rank its ``RANK``/``LOCAL_RANK``, forwards SIGTERM to them and
ends them all when one fails. Rank 0 is the service and the others follow its learner
(``halo_trainer.learner.ranks``). One setting thus means the same thing in the embedded stack, in
Compose and by hand, and the stack's and Compose's stop reach every rank through the parent.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys


def problem(ranks: int, device: str) -> str | None:
    """Why ``ranks`` learner ranks cannot start with the learner on ``device``, or None."""
    if ranks <= 1 or not device.startswith("cuda"):
        return None
    if device != "cuda":
        return (
            f"HALO_TRAINER_DEVICE={device} names one card, but HALO_TRAINER_LEARNER_RANKS={ranks} puts rank k "
            "on the k-th card the trainer sees: leave HALO_TRAINER_DEVICE unset and choose the cards with "
            "CUDA_VISIBLE_DEVICES (in Compose: the trainer's device_ids)"
        )
    import torch

    seen = torch.cuda.device_count()
    if ranks > seen:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return (
            f"HALO_TRAINER_LEARNER_RANKS={ranks} puts one rank on each card, but torch sees {seen} card(s) here"
            + (f" (CUDA_VISIBLE_DEVICES={visible})" if visible is not None else "")
            + f": give the trainer {ranks} cards (in Compose: the trainer's device_ids) or set the ranks to {seen}"
        )
    return None


def launcher_argv(
    ranks: int, nodes: int = 1, node_rank: int = 0, rendezvous: str = "", module: str = "halo_trainer"
) -> list[str]:
    """torchrun's arguments for ``ranks`` processes on this machine, of ``nodes`` machines."""
    if nodes == 1:
        # --standalone: a rendezvous of this machine only, on a free port (no MASTER_ADDR to set).
        # --local-addr: the ranks meet on the loopback, not at the machine's host name, which need not
        # resolve (a container without a network: the ranks then retried it forever, never started).
        where = ["--standalone", "--local-addr=127.0.0.1"]
    else:
        # The static rendezvous: node 0 holds the store at the address every node is given, so no
        # name has to resolve and the global ranks follow the node ranks (node 0's rank 0 is the service).
        host, _, port = rendezvous.rpartition(":")
        where = [f"--nnodes={nodes}", f"--node-rank={node_rank}", f"--master-addr={host}", f"--master-port={port}"]
    return [*where, f"--nproc-per-node={ranks}", "--module", module]


def launch(ranks: int, nodes: int = 1, node_rank: int = 0, rendezvous: str = "", module: str = "halo_trainer") -> int:
    """Run ``module`` (this service) as ``ranks`` processes on this machine under torch's elastic
    launcher, one machine of ``nodes`` meeting at ``rendezvous``; its exit status."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    args = get_args_parser().parse_args(launcher_argv(ranks, nodes, node_rank, rendezvous, module))
    try:
        run(args)
    except ChildFailedError as exc:  # a rank exited non-zero; the launcher has ended the others
        failures = "; ".join(f"rank {rank}: exit {f.exitcode}" for rank, f in sorted(exc.failures.items()))
        sys.stderr.write(f"halo_trainer: the learner's ranks stopped ({failures}); each rank's own lines are above\n")
        return 1
    except SignalException as exc:  # SIGTERM/SIGINT to the launcher: it has passed it to the ranks
        sys.stderr.write(f"halo_trainer: stopped by {exc.sigval.name}; every rank was stopped\n")
        return 0
    return 0


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_launcher() -> None:
    """A rank ends when its launcher does, even by SIGKILL: the launcher starts each rank in a
    session of its own, so a stop of the launcher's process group (a ``kill -9`` of the service,
    the stack's last resort) would otherwise leave the ranks running, rank 0 holding the API's port."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the launcher's own shutdown still ends the ranks
        return
    if os.getppid() != parent:  # the launcher died before the line above
        os._exit(1)
