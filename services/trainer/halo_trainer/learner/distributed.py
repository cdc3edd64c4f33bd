"""The learner across ranks: data-parallel with PyTorch FSDP2 (``fully_shard``) under ``torchrun``.

Every rank builds the same ``Learner`` with ``ranks=Ranks.from_env()`` and is given the same batch
(one process is ``Ranks()``: rank 0 of 1, every collective its own value, so the learner has one
path for both);
each scores its share of the update's micro-batches (``share``: round-robin over the micro-batches a
single process would cut, so a prompt group stays on one rank) and the gradients are summed over
the ranks, not averaged: the objective's normaliser is the whole batch's (Dr. GRPO's constant,
DPO's pair count), so the sum is one process's gradient up to the order of the additions. AdamW then steps each rank's shard of the parameters.

FSDP2 gathers a unit's parameters in the unit's forward. ``halo_model`` calls the model's parts
(``core.model``, ``language_model``, ``lm_head``) rather than the model as a whole, and Qwen3-VL
calls ``embed_tokens`` and ``visual`` from outside the language model's forward, so each of those is
a unit of its own (``shard``), every decoder layer and vision block too, so that one layer's
parameters at a time are whole on a rank; ``core.model``, whose forward runs first, is their root.

Collectives need every rank to make the same calls: a rank with fewer micro-batches than another
runs the update's first micro-batch again with its loss times zero (``share`` says which), and
``Learner.logprobs``, ``trainable_state``, ``weights.save_adapter`` and checkpoints are collective
(every rank calls them; rank 0 alone writes files).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor, distribute_tensor

from halo_model.logprobs import base_model


@dataclass(frozen=True)
class Ranks:
    """This process's place among the learner's ranks and the mesh FSDP2 shards over; ``Ranks()`` is
    one process (no mesh), for which every method below is what one process does: nothing sharded,
    every micro-batch its own, a gather of its own value, no barrier."""

    rank: int = 0
    world_size: int = 1
    mesh: DeviceMesh | None = None

    @property
    def writes(self) -> bool:
        """Rank 0 acknowledges jobs, publishes adapters and writes checkpoints."""
        return self.rank == 0

    @property
    def several(self) -> bool:
        return self.world_size > 1

    @classmethod
    def from_env(cls) -> Ranks:
        """The ranks ``torchrun`` describes (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``); ``Ranks()`` for
        one process. Starts the process group when the caller has not: NCCL on CUDA, gloo on the CPU."""
        text = os.environ.get("WORLD_SIZE", "1")
        if not text.isdigit():
            raise ValueError(f"WORLD_SIZE={text!r}: a number of processes (torchrun sets it)")
        world = int(text)
        if world <= 1:
            return cls()
        for name in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            if name not in os.environ:
                raise ValueError(f"WORLD_SIZE={world} but {name} is not set: start the learner with torchrun")
        cuda = torch.cuda.is_available()
        if cuda:
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        if not dist.is_initialized():
            dist.init_process_group("nccl" if cuda else "gloo")
        return cls.of_group("cuda" if cuda else "cpu")

    @classmethod
    def of_group(cls, device_type: str) -> Ranks:
        """The ranks of the process group already started (tests start theirs themselves)."""
        world = dist.get_world_size()
        return cls(rank=dist.get_rank(), world_size=world, mesh=init_device_mesh(device_type, (world,)))

    def shard(self, model: nn.Module) -> None:
        """``shard`` the model over these ranks; one process keeps it whole."""
        if self.mesh is not None:
            shard(model, self)

    def share(self, micro_batches: Sequence[list[int]]) -> list[tuple[list[int], bool]]:
        """This rank's micro-batches (``share``); one process's are all of them, every one counted."""
        return share(micro_batches, self)

    def gathered(self, value: Any) -> list[Any]:
        """``value`` of every rank in rank order (a collective); ``[value]`` for one process."""
        return gathered(value) if self.several else [value]

    def merged(self, stats: Any) -> Any:
        """A micro-batch statistics object (``merge``-able) summed over the ranks; itself for one process."""
        every = self.gathered(stats)
        return functools.reduce(type(stats).merge, every[1:], every[0])

    def barrier(self) -> None:
        """Wait for every rank (rank 0 writing a file the others read); nothing for one process."""
        if self.several:
            dist.barrier()


def _units(core: nn.Module) -> list[nn.Module]:
    """The modules sharded as one unit each, children before parents (FSDP2 wants them so)."""
    model = core.model
    text, vision = model.language_model, model.visual
    units: list[nn.Module] = [*vision.blocks, vision, text.embed_tokens, *text.layers, text]
    if core.lm_head.weight is text.embed_tokens.weight:
        raise ValueError(
            "lm_head is tied to the embeddings: the learner across ranks shards them as separate units "
            "(Qwen3-VL-8B does not tie them; set tie_word_embeddings=false for a model that does)"
        )
    # ``core.model`` is the root of the units under it (its forward runs first); ``lm_head``, called
    # after it from outside, is a root of its own.
    return [*units, model, core.lm_head]


def shard(model: nn.Module, ranks: Ranks) -> None:
    """``fully_shard`` the model's units in place; gradients are summed over the ranks (see the module docstring)."""
    assert ranks.mesh is not None, "one process has nothing to shard over (Ranks.shard keeps the model whole)"
    for unit in _units(base_model(model)):
        fully_shard(unit, mesh=ranks.mesh)
        assert isinstance(unit, FSDPModule)
        # The objective divides by the whole batch already: averaging would divide by the ranks again.
        unit.set_gradient_divide_factor(1.0)
        # A plain SUM: gloo has no PREMUL_SUM, and with a factor of 1 there is nothing to multiply.
        unit.set_force_sum_reduction_for_comms(True)


def share(micro_batches: Sequence[list[int]], ranks: Ranks) -> list[tuple[list[int], bool]]:
    """This rank's micro-batches, each with whether its loss counts: round-robin, padded with a
    repeat of a counted one (loss times zero) up to the most any rank has, so every rank makes the
    same number of forward and backward passes. Nothing when no rank has any."""
    if not micro_batches:
        return []
    mine = [(rows, True) for rows in micro_batches[ranks.rank :: ranks.world_size]]
    most = -(-len(micro_batches) // ranks.world_size)
    return mine + [(micro_batches[0], False)] * (most - len(mine))


def gathered(value: Any) -> list[Any]:
    """``value`` of every rank, in rank order (a collective)."""
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def full(tensor: Tensor) -> Tensor:
    """A parameter or state tensor whole (a collective for a sharded one), detached."""
    return tensor.full_tensor().detach() if isinstance(tensor, DTensor) else tensor.detach()


def like(target: Tensor, value: Tensor) -> Tensor:
    """``value`` (whole, the same on every rank) as ``target`` holds it: this rank's shard for a
    sharded ``target``, cut locally without communication."""
    if isinstance(target, DTensor):
        value = value.to(device=target.device, dtype=target.dtype)
        return distribute_tensor(value, target.device_mesh, target.placements, src_data_rank=None)
    return value.to(device=target.device, dtype=target.dtype)


def full_optimizer_state(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """``optimizer.state_dict()`` with every sharded tensor whole on the CPU: the one-process format,
    which a learner on any number of ranks loads (``load_optimizer_state``). A collective."""
    state = optimizer.state_dict()
    state["state"] = {
        index: {key: full(value).cpu() if isinstance(value, Tensor) else value for key, value in slots.items()}
        for index, slots in state["state"].items()
    }
    return state


def load_optimizer_state(optimizer: torch.optim.Optimizer, params: Sequence[Tensor], state: dict[str, Any]) -> None:
    """Load a one-process ``optimizer.state_dict()`` into an optimiser over ``params`` sharded or not."""
    slots = state["state"]
    for index, param in enumerate(params):
        if index in slots:
            slots[index] = {
                key: like(param, value) if isinstance(value, Tensor) and value.dim() > 0 else value
                for key, value in slots[index].items()
            }
    optimizer.load_state_dict(state)
