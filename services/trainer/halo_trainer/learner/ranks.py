"""The learner across ranks inside the run loop: rank 0 runs the loop, the other ranks follow its learner.

Under ``torchrun --nproc-per-node N -m halo_trainer`` rank 0 is the trainer service as one process
is: the run API, Redis (collecting results, acknowledging jobs after the checkpoint), publishing
adapters to vLLM, metrics and events. The other ranks never reach Redis, vLLM or the API. Each
waits for rank 0's word (``serve``): build the run's learner as rank 0 builds its own, then make
every call of the learner that all ranks must make (FSDP2's gathers and gradient sums are
collectives, ``halo_trainer.learner.distributed``), in rank 0's order, with rank 0's arguments:
each update's batch, the DPO pairs and their reference log-probs, where an adapter or a checkpoint
is saved and which checkpoint to resume.

The loop holds a ``Leader`` where it held the learner. Each of those calls is first broadcast to
the other ranks (``Channel``), then made here; in one process (no channel) the Leader only makes
the call, so a run on one process is what it was before ranks existed. The word travels on a gloo
group of its own: the batch is on the CPU where it was built (the learner moves each micro-batch to
its device), pickled with each screenshot's pixels once (the batch holds them once, its rows
refer to them: ``halo_model.inputs``), and a rank waiting for the next update, or for the next run, is not bound by the
timeout of the learner's own collectives.

Ranks fail together. After each learner call every rank writes its outcome (None, or the error's
line) to the process group's store and reads every other rank's (``Channel.outcomes``): rank 0 then
raises ``RankFailed`` naming each follower that failed and its error (its own error when it alone
failed and every rank reported); a follower logs what failed elsewhere and keeps listening (rank 0
ends the run). The store, not a collective, carries the outcomes because a rank that failed may have left the others
inside one of the learner's collectives: a rank whose call failed waits ``ANSWER`` for the others'
outcomes only, and when one is missing that rank is waiting in a collective this rank will not
join. A follower then raises ``RankFailed`` out of ``serve`` and its process exits, which closes its
connections (destroying or aborting a gloo group does not, while the learner's mesh holds it): rank 0's gloo collective raises within seconds, and rank 0 reads the follower's error
from the store, which outlives the follower. Rank 0 in that place tells the followers to leave
(``LEAVE``; each follower's process exits on it), since it is the service and stays. On NCCL a
peer's exit does not end a collective: the launcher (torchrun, ``halo_trainer.learner.launch``) ends
every rank when one exits non-zero, and ``TORCH_NCCL_ASYNC_ERROR_HANDLING`` (on by default) ends a
collective at its timeout. After a rank left, the ranks are broken: rank 0's later learner calls
raise ``RankFailed`` at once, and the service needs a restart to span the ranks again (under the
launcher every rank ends).

Every rank must see the run folder at the same path (one node, or a shared filesystem): a rank
other than 0 reads back the checkpoint rank 0 committed, and reads the one it resumes.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from halo.settings.trainer import LearnerConfig
from halo_trainer.learner.checkpoint import Checkpoint, CheckpointManager
from halo_trainer.learner.distributed import Ranks
from halo_trainer.learner.dpo_update import dpo_update
from halo_trainer.learner.learner import Learner
from halo_trainer.learner.learner_batch import LearnerBatch

logger = logging.getLogger(__name__)

# How long a rank may wait for rank 0's next word: between runs the service can idle for days.
# A rank 0 that dies closes the group's connections, which ends the wait at once.
WAIT = timedelta(days=3650)

# How long a rank whose call failed waits for the other ranks' outcomes before it takes them to be
# inside a collective it will not join: the ranks run in step (every call is collective), so ranks
# that fail alike on the same input report within a moment of each other.
ANSWER = timedelta(seconds=10)

# The store's keys of this module (the process group's own keys live beside them).
_KEYS = "halo/ranks/"
LEAVE = _KEYS + "leave"  # rank 0 to the followers: exit, you are in a collective rank 0 left
LEFT = _KEYS + "left"  # a follower to rank 0: I left (my process exits)


class RankFailed(RuntimeError):
    """A learner call failed on another rank (or the ranks broke earlier); the message names each
    failed rank and its error line."""


def _line(name: str, exc: BaseException | None) -> str | None:
    """What the other ranks learn of a failed call: its error's first line, bounded."""
    if exc is None:
        return None
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{name} failed: {type(exc).__name__}: {text}"[:500]


class Channel:
    """Rank 0's word to the other ranks: (call name, args, kwargs) broadcast on a gloo group of its own.

    Opened by every rank at the same point (creating a group is a collective)."""

    def __init__(self, ranks: Ranks) -> None:
        self.ranks = ranks
        self.group = dist.new_group(backend="gloo", timeout=WAIT)
        # One call at a time: a second thread's word between another's word and its call would
        # put rank 0's collectives out of the other ranks' order.
        self.lock = threading.Lock()
        # The group's store (torchrun's agent or rank 0 hosts it): held here, so that it stays
        # readable after another rank's process is gone. No public accessor exists for it.
        self.store = dist.distributed_c10d._get_default_store()
        self.words = 0  # words told (rank 0) or heard: every rank counts the same ones
        self.broken: str | None = None  # why the ranks no longer follow rank 0 (rank 0 only)
        self.last_call = 0  # the word of the last call whose outcomes were exchanged

    def tell(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.words += 1
        dist.broadcast_object_list([(name, args, kwargs)], src=0, group=self.group)

    def hear(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0, group=self.group)
        self.words += 1
        return box[0]

    def _key(self, word: int, rank: int) -> str:
        return f"{_KEYS}{word}/{rank}"

    def outcomes(self, error: str | None) -> dict[int, str | None] | None:
        """Every rank's outcome of the call just made (None: it succeeded), this rank's ``error``
        told to the others. None when this rank failed and another rank did not report within
        ``ANSWER``: that rank is inside a collective of the call. A rank that succeeded waits for
        all (the others could not have left it in a collective)."""
        word, world = self.words, self.ranks.world_size
        self.store.set(self._key(word, self.ranks.rank), json.dumps(error))
        keys = [self._key(word, rank) for rank in range(world)]
        deadline = time.monotonic() + (ANSWER if error is not None else WAIT).total_seconds()
        # Polled, not ``store.wait``: a short request at a time leaves the store free for the
        # follower's thread that watches for ``LEAVE``.
        while not self.store.check(keys):
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
        found = {rank: json.loads(self.store.get(key)) for rank, key in enumerate(keys)}
        if self.ranks.rank == 0 and self.last_call:
            # Every follower has read the previous call's outcomes: it heard this call's word after.
            for rank in range(world):
                self.store.delete_key(self._key(self.last_call, rank))
        self.last_call = word
        return found


def _checkpoint(learner: Learner, checkpoints: CheckpointManager, **kwargs: Any) -> Checkpoint:
    return checkpoints.save(learner, **kwargs)


def _resume(learner: Learner, checkpoints: CheckpointManager) -> Checkpoint | None:
    return checkpoints.resume(learner)


# The learner's calls every rank makes, by the name rank 0 sends.
CALLS: dict[str, Callable[..., Any]] = {
    "update": Learner.update,
    "logprobs": Learner.logprobs,
    "dpo_update": dpo_update,
    "save_adapter": lambda learner, directory: learner.weights.save_adapter(directory),
    "checkpoint": _checkpoint,
    "resume": _resume,
}


class Leader:
    """The learner as the run loop calls it: each call every rank makes is told to the other ranks first."""

    def __init__(self, learner: Learner, channel: Channel | None = None) -> None:
        self.local, self.channel = learner, channel  # local: this process's learner

    @classmethod
    def of(cls, learner: Learner | Leader) -> Leader:
        """``learner`` as a Leader: one process's learner is led by nobody but itself."""
        return learner if isinstance(learner, Leader) else cls(learner)

    @property
    def vocab_size(self) -> int:
        return self.local.vocab_size

    @property
    def config(self) -> LearnerConfig:
        return self.local.config

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        channel = self.channel
        if channel is None:
            return CALLS[name](self.local, *args, **kwargs)
        with channel.lock:
            if channel.broken is not None:
                raise RankFailed(channel.broken)
            channel.tell(name, *args, **kwargs)
            try:
                result, own = CALLS[name](self.local, *args, **kwargs), None
            except Exception as exc:  # told to the other ranks before it is raised here
                result, own = None, exc
            outcomes = channel.outcomes(_line(name, own))
            if outcomes is None:
                # A follower is inside a collective this call left: it exits on LEAVE.
                channel.store.set(LEAVE, "1")
                channel.broken = f"rank 0: {_line(name, own)}; the other ranks were told to leave"
                raise RankFailed(channel.broken) from own
            failed = [f"rank {rank}: {line}" for rank, line in outcomes.items() if rank != 0 and line is not None]
            if failed:
                if channel.store.check([LEFT]):
                    channel.broken = f"the ranks broke on {name}: {'; '.join(failed)}"
                # The followers' errors first: rank 0's own, if any, is often only the
                # connection a leaving follower closed.
                raise RankFailed("; ".join(failed + ([f"rank 0: {outcomes[0]}"] if own is not None else []))) from own
            if own is not None:
                raise own
            return result

    def update(self, batch: LearnerBatch) -> dict[str, float]:
        return self._call("update", batch)

    def logprobs(self, batch: LearnerBatch, *, adapter: bool = True) -> Tensor:
        return self._call("logprobs", batch, adapter=adapter)

    def dpo_update(
        self,
        chosen: LearnerBatch,
        rejected: LearnerBatch,
        ref_chosen: Tensor,
        ref_rejected: Tensor,
        *,
        beta: float,
        rpo_alpha: float,
    ) -> dict[str, float]:
        # On the CPU: the other ranks put them on their own devices, as the update does a micro-batch at a time.
        refs = (ref_chosen.cpu(), ref_rejected.cpu()) if self.channel is not None else (ref_chosen, ref_rejected)
        return self._call("dpo_update", chosen, rejected, *refs, beta=beta, rpo_alpha=rpo_alpha)

    def save_adapter(self, directory: Path) -> Path:
        return self._call("save_adapter", directory)

    def checkpoint(
        self, checkpoints: CheckpointManager, *, config: dict[str, Any], extra: dict[str, Any]
    ) -> Checkpoint:
        return self._call("checkpoint", checkpoints, config=config, extra=extra)

    def resume(self, checkpoints: CheckpointManager) -> Checkpoint | None:
        return self._call("resume", checkpoints)


def build(
    model_path: str, config: LearnerConfig, *, device: str, dtype: str, seed: int, ranks: Ranks | None = None
) -> Learner:
    """A run's learner: the LoRA initialised from the run's ``seed``, so that one process and every
    rank start from the same adapter (each rank's shard is of it, and N ranks make one process's
    updates), and a run started again draws it again. Across ranks ``device`` is the mesh's
    device type: each rank's own card (torchrun's ``LOCAL_RANK``, ``Ranks.from_env``)."""
    from halo_model.loading import load_model

    model = load_model(model_path, device=device, dtype=dtype)
    torch.manual_seed(seed)
    return Learner(model, config, ranks=ranks)


def _build_across(channel: Channel, model_path: str, config: LearnerConfig, dtype: str, seed: int) -> Learner:
    """This rank's shard of a run's learner: what rank 0 (``lead``) and every follower (``serve``,
    on rank 0's ``start``) build, so that the ranks' learners cannot drift apart."""
    ranks = channel.ranks
    return build(model_path, config, device=ranks.mesh.device_type, dtype=dtype, seed=seed, ranks=ranks)


# What a follower's log line shows of an update's metrics: every rank reports the gathered figures,
# so these equal the ones rank 0 writes to the run's metrics.
_SHOWN = ("train/step", "train/loss", "train/grad_norm", "train/tokens", "dpo/loss", "dpo/grad_norm")


def _figures(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    shown = [f"{key}={result[key]:.9g}" for key in _SHOWN if isinstance(result.get(key), (int, float))]
    return f" ({', '.join(shown)})" if shown else ""


_joined: Channel | None = None


def join() -> Channel | None:
    """This process's channel under torchrun (``WORLD_SIZE`` > 1), opened once: the process group
    is started (``Ranks.from_env``); None in one process."""
    global _joined
    if _joined is None and (ranks := Ranks.from_env()).several:
        _joined = Channel(ranks)
    return _joined


def world_size() -> int:
    """How many ranks this process's learner spans (1 in one process)."""
    return 1 if _joined is None else _joined.ranks.world_size


def lead(model_path: str, config: LearnerConfig, *, device: str, dtype: str, seed: int) -> Leader:
    """A run's learner on rank 0, the other ranks told to build theirs alike; one process's learner
    when this process joined no ranks (``build``)."""
    channel = _joined
    if channel is None:
        return Leader(build(model_path, config, device=device, dtype=dtype, seed=seed))
    with channel.lock:
        channel.tell("start", model_path, config, dtype, seed)
        return Leader(_build_across(channel, model_path, config, dtype, seed), channel)


def _tell_all(word: str) -> None:
    """``word`` to the other ranks, unless they broke: a run that failed because a rank left must
    still end here (the caller records the failure after this)."""
    if _joined is None:
        return
    with _joined.lock:
        if _joined.broken is not None:
            logger.warning("the other ranks are not told %r: %s", word, _joined.broken)
            return
        try:
            _joined.tell(word)
        except RuntimeError as exc:  # a follower gone since the last call (its connection closed)
            _joined.broken = f"a rank is gone: {_line(word, exc)}"
            logger.error("the other ranks did not hear %r: %s", word, exc)


def end_run() -> None:
    """Rank 0's run is over (however it ended): the other ranks drop their learners and wait for the next."""
    _tell_all("end")


def close() -> None:
    """Rank 0 leaves: the other ranks' ``serve`` returns."""
    _tell_all("exit")


def _leave_when_told(channel: Channel) -> None:
    """A follower's watch for rank 0's ``LEAVE``: its main thread may be blocked in a collective
    rank 0 left, and only this process's exit ends that (the launcher then ends the rest)."""
    while not channel.store.check([LEAVE]):
        time.sleep(0.5)
    sys.stderr.write(f"rank {channel.ranks.rank}: rank 0's learner call failed; leaving the ranks\n")
    sys.stderr.flush()
    os._exit(1)


def serve(channel: Channel) -> list[str]:
    """A rank other than 0: do what rank 0 says until it says ``exit``; the learner calls it made, in order.

    ``start`` builds a run's learner (replacing any before it), ``end`` drops it, and every other
    word is a learner call (``CALLS``), whose outcome every rank learns (``Channel.outcomes``). A
    call that failed on some rank while every rank reported is logged, and this rank keeps
    listening: rank 0 raises it and ends the run. A call that failed here while another rank did
    not report (it waits in a collective of the call) raises ``RankFailed``: the caller ends this
    process, which ends that collective (the module docstring). So does rank 0's ``LEAVE``."""
    threading.Thread(target=_leave_when_told, args=(channel,), name="leave-when-told", daemon=True).start()
    rank = channel.ranks.rank
    made: list[str] = []
    learner: Learner | None = None
    while True:
        name, args, kwargs = channel.hear()
        if name == "exit":
            return made
        if name in ("start", "end"):
            learner = None
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if name == "start":
                learner = _build_across(channel, *args)
            logger.info("%s of a run's learner", "built" if learner is not None else "dropped")
            continue
        error: Exception | None = None
        try:
            if learner is None:
                raise RuntimeError("rank 0 asked for it with no run's learner built")
            result = CALLS[name](learner, *args, **kwargs)
        except Exception as exc:
            logger.exception("rank %d: %s failed", rank, name)
            error = exc
        outcomes = channel.outcomes(_line(name, error))
        if outcomes is None:
            channel.store.set(LEFT, str(rank))
            why = f"another rank did not report within {ANSWER.total_seconds():.0f} s (it waits in a collective)"
            raise RankFailed(f"rank {rank}: {_line(name, error)}; {why}: leaving the ranks") from error
        if error is None:
            made.append(name)
            logger.info("%s made%s", name, _figures(result))
        if failed := [f"rank {other}: {line}" for other, line in outcomes.items() if line is not None]:
            logger.error("%s; rank 0 ends the run", "; ".join(failed))
