"""The learner's head at Qwen3-VL-8B's vocabulary (151,936): the peak of the log-probs, the entropy
metric, the loss and the backward, traced on the CPU, against the memory plan's logits term.

The entropy metric is computed between the forward and the backward; at the full vocabulary its
float32 copies came on top of the log-softmax the backward keeps (25 bytes per vocabulary entry per
completion token at temperature 0.7, against the plan's 14). Computed in chunks it stays below the
backward's peak, which the plan counts, and gives the same values.
"""

from __future__ import annotations

import functools

import pytest
import torch
from torch import Tensor, nn
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from halo_model.logprobs import token_logprobs
from halo_trainer.learner.learner_batch import LearnerBatch, chunked_entropy, logprobs_and_entropy
from halo_trainer.learner.memory.dims import GIB, QWEN3_VL_8B
from halo_trainer.learner.memory.parts import Workload, breakdown
from halo_trainer.learner.objective import entropy_from_logits, policy_loss

GPU_TEMPERATURE = 0.7  # the gpu target's sampling temperature (configs/rl_config.yaml)


class PeakBytes(TorchDispatchMode):
    """The most bytes the tensors made inside it held at once: every storage an operation returns is
    counted from that operation until it is freed (checked after each operation, when peaks happen)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_flatten(out)[0]:
            if isinstance(tensor, Tensor):
                storage = tensor.untyped_storage()
                self.live.setdefault(storage._cdata, (StorageWeakRef(storage), storage.nbytes()))
        self.live = {key: kept for key, kept in self.live.items() if not kept[0].expired()}
        self.peak = max(self.peak, sum(size for _, size in self.live.values()))
        return out


class Head(nn.Module):
    """What the log-prob function reads at the end of the decoder: a frozen bf16 ``lm_head``."""

    def __init__(self, hidden: int, vocab: int) -> None:
        super().__init__()
        self.lm_head = nn.Linear(hidden, vocab, bias=False, dtype=torch.bfloat16).requires_grad_(False)


def plan_head_bytes_per_vocab(work: Workload) -> float:
    """The plan's logits term for the 8B, in bytes per vocabulary entry per completion token."""
    items, _ = breakdown(QWEN3_VL_8B, work)
    (gib,) = [g for name, g, _ in items if name.startswith("logits")]
    return gib * GIB / (work.rows() * work.completion_tokens * QWEN3_VL_8B.vocab_size)


@pytest.mark.slow
def test_the_heads_traced_peak_at_the_8b_vocabulary_is_within_the_plans_logits_term() -> None:
    torch.manual_seed(0)
    vocab, rows, width = QWEN3_VL_8B.vocab_size, 4, 32  # a small hidden size: the vocabulary term matters
    head = Head(64, vocab)
    hidden = torch.randn(rows, width, 64, dtype=torch.bfloat16, requires_grad=True)  # the decoder's output
    ids = torch.randint(0, vocab, (rows, width))
    mask = torch.ones(rows, width, dtype=torch.bool)

    def logprob_fn(model, inputs, *, grad, allowed, temperature):
        return token_logprobs(model, hidden, ids, inputs.completion_mask, temperature=temperature, allowed=allowed)

    inputs = type("Inputs", (), {"completion_mask": mask})()
    batch = LearnerBatch(inputs=inputs, advantages=torch.tensor([1.0, -1.0, 0.5, -0.5]))
    fn = functools.partial(logprob_fn, temperature=GPU_TEMPERATURE)
    with PeakBytes() as traced:  # the learner's step on one micro-batch, from the head on
        logp, entropy = logprobs_and_entropy(fn, head, batch, grad=True, temperature=GPU_TEMPERATURE)
        loss, stats = policy_loss(logp, logp.detach(), batch.advantages, mask, entropy=entropy)
        loss.backward()
    assert stats.entropy_tokens == rows * width and hidden.grad is not None

    traced_per_vocab = traced.peak / (rows * width * vocab)
    planned = plan_head_bytes_per_vocab(Workload(dtype="bfloat16"))
    # 14.0 planned (the saved log-softmax, the head's output, two float32 copies in the backward);
    # 13.0 traced here, 25.0 when the entropy held its copies at the full vocabulary.
    assert traced_per_vocab <= planned, f"traced {traced_per_vocab:.2f} B per vocab entry, planned {planned:.2f}"
    assert traced_per_vocab >= 0.85 * planned, (
        f"the plan is loose: traced {traced_per_vocab:.2f}, planned {planned:.2f}"
    )


@pytest.mark.parametrize("temperature", [1.0, GPU_TEMPERATURE])
def test_the_chunked_entropy_is_the_full_vocabulary_entropy(temperature: float) -> None:
    torch.manual_seed(1)
    logits = (3 * torch.randn(3, 70, 500)).to(torch.bfloat16)  # 70 positions: two full chunks and a part
    allowed = torch.rand(3, 70, 512) > 0.3  # a grammar's mask, wider than the head as the learner's can be
    allowed[..., 0] = True
    for mask in (None, allowed):
        full = logits / temperature if temperature != 1.0 else logits
        if mask is not None:
            full = full.masked_fill(~mask[..., : full.shape[-1]], float("-inf"))
        expected = entropy_from_logits(full)
        chunked = chunked_entropy(logits, temperature, mask)
        assert chunked.shape == expected.shape == (3, 70) and chunked.dtype == torch.float32
        assert torch.allclose(chunked, expected, atol=1e-6, rtol=0), float((chunked - expected).abs().max())
