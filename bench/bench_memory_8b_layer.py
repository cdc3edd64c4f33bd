"""What autograd keeps per token in one Qwen3-VL-8B decoder layer, one vision block and the head.

The learner's memory plan (``halo_trainer.learner.memory.plan``) scales these per-token figures by the
layer count, the micro-batch and the sequence length; this bench measures them on the CPU, at the
8B's real widths (``memory_dims.QWEN3_VL_8B``), with random weights:

- one text decoder layer (transformers' ``Qwen3VLTextDecoderLayer``, SDPA attention) with the
  policy's LoRA (r=16 on q/k/v/o/gate/up/down, float32 adapter weights as ``get_peft_model`` casts
  them), its input requiring grad as in a middle layer;
- one vision block (``Qwen3VLVisionBlock``) trained in full, the ``full_weights: [vision]`` case
  (LoRA-only runs keep nothing of the frozen vision tower: no parameter there wants a gradient);
- the head as ``halo_model.logprobs.completion_logprobs`` runs it (lm_head on the completion
  positions, float32 log-softmax, gather), at a reduced vocabulary, per completion token and
  vocabulary entry.

Each is run forward with gradients in float32 and bfloat16, with and without gradient
checkpointing (``torch.utils.checkpoint``, non-reentrant, as transformers enables it), at a few
sequence lengths. What is kept is summed over the storages autograd saves
(``torch.autograd.graph.saved_tensors_hooks``), each storage once, parameters left out (they are
the weights, counted apart); under checkpointing nothing inside the layer is saved and what stays is
the layer's input, held by the checkpoint for the recomputation. The per-token figure is the slope
of a line fitted through the lengths (SDPA keeps no L x L matrix, so the fit is exact up to a
constant). Writes bench/results/memory_8b_layer.json.

    .venv/bin/python bench/bench_memory_8b_layer.py            # a few minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch
from torch.utils.checkpoint import checkpoint

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from halo_trainer.learner.memory.dims import QWEN3_VL_8B  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class SavedBytes:
    """Bytes of the distinct non-parameter storages autograd saves while the context is open."""

    def __init__(self, exclude: list[torch.Tensor]) -> None:
        self.excluded = {t.untyped_storage().data_ptr() for t in exclude}
        self.seen: dict[int, int] = {}

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in self.excluded and ptr not in self.seen:
            self.seen[ptr] = storage.nbytes()
        return tensor

    def __enter__(self) -> SavedBytes:
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)

    @property
    def total(self) -> int:
        return sum(self.seen.values())


def text_layer(dtype: torch.dtype, rank: int) -> tuple[torch.nn.Module, torch.nn.Module]:
    from peft import LoraConfig, inject_adapter_in_model
    from peft.tuners.tuners_utils import cast_adapter_dtype
    from transformers import Qwen3VLTextConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextDecoderLayer, Qwen3VLTextRotaryEmbedding

    dims = QWEN3_VL_8B
    config = Qwen3VLTextConfig(
        vocab_size=dims.vocab_size,
        hidden_size=dims.hidden_size,
        intermediate_size=dims.intermediate_size,
        num_hidden_layers=1,
        num_attention_heads=dims.num_attention_heads,
        num_key_value_heads=dims.num_key_value_heads,
        head_dim=dims.head_dim,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 5_000_000.0,
            "mrope_section": [24, 20, 20],
            "mrope_interleaved": True,
        },
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    layer = Qwen3VLTextDecoderLayer(config, layer_idx=0).to(dtype)
    layer.requires_grad_(False)
    layer = inject_adapter_in_model(LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=LORA_TARGETS), layer)
    # As get_peft_model leaves it for the learner: float32 adapter weights on a bfloat16 base, so each
    # adapted projection keeps its own float32 copy of its input.
    cast_adapter_dtype(layer, "default", autocast_adapter_dtype=True)
    return layer, Qwen3VLTextRotaryEmbedding(config)


def vision_block(dtype: torch.dtype) -> tuple[torch.nn.Module, torch.nn.Module]:
    from transformers import Qwen3VLVisionConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionBlock, Qwen3VLVisionRotaryEmbedding

    dims = QWEN3_VL_8B
    config = Qwen3VLVisionConfig(
        depth=1,
        hidden_size=dims.vision_hidden_size,
        num_heads=dims.vision_heads,
        intermediate_size=dims.vision_intermediate_size,
        out_hidden_size=dims.hidden_size,
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    block = Qwen3VLVisionBlock(config).to(dtype)
    block.requires_grad_(True)  # full_weights: [vision] trains it
    return block, Qwen3VLVisionRotaryEmbedding(config)


def measure_text(layer, rotary, dtype: torch.dtype, length: int, ckpt: bool) -> int:
    x = torch.randn(1, length, QWEN3_VL_8B.hidden_size, dtype=dtype, requires_grad=True)
    positions = torch.arange(length).view(1, 1, -1).expand(3, 1, -1)
    cos, sin = rotary(x, positions)
    params = list(layer.parameters())
    with SavedBytes(exclude=params + [cos, sin]) as saved:
        if ckpt:
            out = checkpoint(layer, x, (cos, sin), use_reentrant=False)
        else:
            out = layer(x, position_embeddings=(cos, sin))
    kept = saved.total
    del out
    return kept


def measure_vision(block, rotary, dtype: torch.dtype, length: int, ckpt: bool) -> int:
    x = torch.randn(length, QWEN3_VL_8B.vision_hidden_size, dtype=dtype, requires_grad=True)
    side = int(length**0.5)
    positions = torch.stack([torch.arange(length) // side, torch.arange(length) % side], dim=-1)
    cos, sin = rotary(x, positions)
    cu_seqlens = torch.tensor([0, length], dtype=torch.int32)
    kwargs = {"cu_seqlens": cu_seqlens, "position_embeddings": (cos, sin), "max_seqlen": length}
    with SavedBytes(exclude=list(block.parameters()) + [cos, sin, cu_seqlens]) as saved:
        out = checkpoint(lambda h: block(h, **kwargs), x, use_reentrant=False) if ckpt else block(x, **kwargs)
    kept = saved.total
    del out
    return kept


def measure_head(dtype: torch.dtype, tokens: int, vocab: int) -> int:
    """completion_logprobs' tail: lm_head on the picked positions, .float(), log_softmax, gather."""
    head = torch.nn.Linear(QWEN3_VL_8B.hidden_size, vocab, bias=False).to(dtype).requires_grad_(False)
    picked = torch.randn(1, tokens, QWEN3_VL_8B.hidden_size, dtype=dtype, requires_grad=True)
    ids = torch.randint(0, vocab, (1, tokens))
    with SavedBytes(exclude=[head.weight, picked]) as saved:
        logits = head(picked).float()
        logp = torch.log_softmax(logits, dim=-1)
        out = torch.gather(logp, 2, ids.unsqueeze(-1)).squeeze(-1)
    del out, logp, logits
    return saved.total


def slope(lengths: list[int], values: list[int]) -> tuple[float, float]:
    """Least-squares line through (length, bytes): (bytes per token, constant bytes)."""
    n = len(lengths)
    mx, my = sum(lengths) / n, sum(values) / n
    b = sum((x - mx) * (y - my) for x, y in zip(lengths, values, strict=True)) / sum((x - mx) ** 2 for x in lengths)
    return b, my - b * mx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512], help="text tokens per sequence")
    parser.add_argument(
        "--vision-lengths", type=int, nargs="+", default=[256, 576, 1024], help="vision patches (square grids)"
    )
    parser.add_argument("--head-vocab", type=int, default=8192, help="vocabulary of the measured head")
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "memory_8b_layer.json")
    args = parser.parse_args()
    torch.set_grad_enabled(True)
    started = time.perf_counter()

    results: dict = {
        "what": "bytes autograd keeps per token (slope over the sequence lengths), parameters excluded",
        "dims": {
            "hidden_size": QWEN3_VL_8B.hidden_size,
            "num_attention_heads": QWEN3_VL_8B.num_attention_heads,
            "num_key_value_heads": QWEN3_VL_8B.num_key_value_heads,
            "head_dim": QWEN3_VL_8B.head_dim,
            "intermediate_size": QWEN3_VL_8B.intermediate_size,
            "vision_hidden_size": QWEN3_VL_8B.vision_hidden_size,
            "vision_heads": QWEN3_VL_8B.vision_heads,
            "vision_intermediate_size": QWEN3_VL_8B.vision_intermediate_size,
        },
        "lora_r": args.lora_r,
        "attention": "sdpa",
        "lengths": args.lengths,
        "vision_lengths": args.vision_lengths,
        "head_vocab": args.head_vocab,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "text_layer": {},
        "vision_block": {},
        "head": {},
        "raw": {},
    }
    for name, dtype in DTYPES.items():
        layer, rotary = text_layer(dtype, args.lora_r)
        for ckpt in (False, True):
            key = f"{name}_{'checkpointing' if ckpt else 'no_checkpointing'}"
            kept = [measure_text(layer, rotary, dtype, n, ckpt) for n in args.lengths]
            per_token, constant = slope(args.lengths, kept)
            results["text_layer"][key] = round(per_token)
            results["raw"][f"text_{key}"] = {"bytes": kept, "constant": round(constant)}
            print(f"text layer  {key:28s} {per_token / 1024:8.1f} KiB/token  (raw {kept})", flush=True)
        del layer
        block, vrotary = vision_block(dtype)
        for ckpt in (False, True):
            key = f"{name}_{'checkpointing' if ckpt else 'no_checkpointing'}"
            kept = [measure_vision(block, vrotary, dtype, n, ckpt) for n in args.vision_lengths]
            per_token, constant = slope(args.vision_lengths, kept)
            results["vision_block"][key] = round(per_token)
            results["raw"][f"vision_{key}"] = {"bytes": kept, "constant": round(constant)}
            print(f"vision block {key:27s} {per_token / 1024:8.1f} KiB/patch  (raw {kept})", flush=True)
        del block
        head = [measure_head(dtype, n, args.head_vocab) for n in (64, 128)]
        per_token, _ = slope([64, 128], head)
        results["head"][name] = round(per_token / args.head_vocab, 3)
        print(f"head        {name:28s} {per_token / args.head_vocab:8.3f} B/token/vocab entry", flush=True)
    results["wall_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"written to {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
