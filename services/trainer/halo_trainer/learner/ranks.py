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
its device), and a rank waiting for the next update, or for the next run, is not bound by the
timeout of the learner's own collectives.

Every rank must see the run folder at the same path (one node, or a shared filesystem): a rank
other than 0 reads back the checkpoint rank 0 committed, and reads the one it resumes.
"""

from __future__ import annotations

import gc
import logging
import threading
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
from halo_trainer.learner.learner import Learner
from halo_trainer.learner.learner_batch import LearnerBatch

logger = logging.getLogger(__name__)

# How long a rank may wait for rank 0's next word: between runs the service can idle for days.
# A rank 0 that dies closes the group's connections, which ends the wait at once.
WAIT = timedelta(days=3650)


class Channel:
    """Rank 0's word to the other ranks: (call name, args, kwargs) broadcast on a gloo group of its own.

    Opened by every rank at the same point (creating a group is a collective)."""

    def __init__(self, ranks: Ranks) -> None:
        self.ranks = ranks
        self.group = dist.new_group(backend="gloo", timeout=WAIT)
        # One call at a time: a second thread's word between another's word and its call would
        # put rank 0's collectives out of the other ranks' order.
        self.lock = threading.Lock()

    def tell(self, name: str, *args: Any, **kwargs: Any) -> None:
        dist.broadcast_object_list([(name, args, kwargs)], src=0, group=self.group)

    def hear(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]


def _checkpoint(learner: Learner, checkpoints: CheckpointManager, **kwargs: Any) -> Checkpoint:
    return checkpoints.save(learner, **kwargs)


def _resume(learner: Learner, checkpoints: CheckpointManager) -> Checkpoint | None:
    return checkpoints.resume(learner)


# The learner's calls every rank makes, by the name rank 0 sends.
CALLS: dict[str, Callable[..., Any]] = {
    "update": Learner.update,
    "logprobs": Learner.logprobs,
    "dpo_update": lambda learner, *args, **kwargs: learner.dpo.update(*args, **kwargs),
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
        if self.channel is None:
            return CALLS[name](self.local, *args, **kwargs)
        with self.channel.lock:
            self.channel.tell(name, *args, **kwargs)
            return CALLS[name](self.local, *args, **kwargs)

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
    if _joined is None and (ranks := Ranks.from_env()) is not None:
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


def end_run() -> None:
    """Rank 0's run is over (however it ended): the other ranks drop their learners and wait for the next."""
    if _joined is not None:
        with _joined.lock:
            _joined.tell("end")


def close() -> None:
    """Rank 0 leaves: the other ranks' ``serve`` returns."""
    if _joined is not None:
        with _joined.lock:
            _joined.tell("exit")


def serve(channel: Channel) -> list[str]:
    """A rank other than 0: do what rank 0 says until it says ``exit``; the learner calls it made, in order.

    ``start`` builds a run's learner (replacing any before it), ``end`` drops it, and every other
    word is a learner call (``CALLS``). A call that fails here is logged and the rank keeps
    listening: rank 0 fails the same way on the same input and ends the run, and a failure of this
    rank alone leaves rank 0 in the collective until its timeout, which fails the run there."""
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
        if learner is None:
            logger.error("rank %d: rank 0 asked for %r with no run's learner built; ignored", channel.ranks.rank, name)
            continue
        try:
            result = CALLS[name](learner, *args, **kwargs)
            made.append(name)
            logger.info("%s made%s", name, _figures(result))
        except Exception:
            logger.exception("rank %d: %s failed", channel.ranks.rank, name)
