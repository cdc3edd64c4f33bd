"""Which base-model parameters a run trains in full beside the LoRA adapter, and the model folders
they travel in.

vLLM applies LoRA to the language model only (``halo_model.lora``), so an adapter cannot change what
the model sees. A run's ``full_weights`` setting names base-model modules the learner trains in full
instead, and vLLM reloads them in place. Each entry is a preset or a module name of the Hugging Face
model (the checkpoint's naming: ``model.visual.merger``, ``model.visual.blocks.26``, ``lm_head``), a
prefix at a dot boundary. The presets, for Qwen3-VL:

* ``vision_merger``: the projections from the vision tower into the language model, the merger and
  the DeepStack mergers (``model.visual.merger``, ``model.visual.deepstack_merger_list``),
* ``vision_last_blocks``: the last ``LAST_BLOCKS`` vision transformer blocks,
* ``vision``: the whole vision tower (``model.visual``),
* ``all``: every parameter (sensible on the tiny model only).

The same names serve the learner (which parameters get ``requires_grad``), checkpoints and the
weight sync, and the folders written here have exactly the keys of the model's own safetensors:
PEFT's ``.base_layer`` dropped from a wrapped layer's name, the adapter's ``lora_`` tensors left out,
a tied weight written once. torch, safetensors and huggingface_hub are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from halo.schemas.choices import check_full_weights

VISION = "model.visual"
LAST_BLOCKS = 2  # vision blocks of the ``vision_last_blocks`` preset


def prefixes(name: str, vision_depth: int) -> list[str]:
    """The module-name prefixes one ``full_weights`` entry stands for ("" = every parameter)."""
    if name == "vision_merger":
        return [f"{VISION}.merger", f"{VISION}.deepstack_merger_list"]
    if name == "vision_last_blocks":
        return [f"{VISION}.blocks.{i}" for i in range(max(0, vision_depth - LAST_BLOCKS), vision_depth)]
    if name == "vision":
        return [VISION]
    if name == "all":
        return [""]
    return [name]


def _under(name: str, prefix: str) -> bool:
    return prefix == "" or name == prefix or name.startswith(prefix + ".")


def select(names: Sequence[str], parameter_names: Sequence[str], vision_depth: int) -> list[str]:
    """The parameter names (checkpoint naming, in ``parameter_names``' order) that ``names`` choose.

    ValueError for an entry that is neither a preset nor a module name, or that matches no parameter.
    """
    chosen: set[str] = set()
    for name in check_full_weights(list(names)):
        hits = [p for p in parameter_names if any(_under(p, pre) for pre in prefixes(name, vision_depth))]
        if not hits:
            tops = sorted({".".join(p.split(".")[:2]) for p in parameter_names})
            raise ValueError(f"full_weights {name!r} matches no parameter of the model (its modules: {tops})")
        chosen.update(hits)
    return [p for p in parameter_names if p in chosen]


def is_adapter_tensor(name: str) -> bool:
    """Is this state-dict key a PEFT adapter tensor (``lora_A``, ``lora_B``, ``lora_embedding_A``, ...)?"""
    return any(part.startswith("lora_") for part in name.split("."))


def checkpoint_name(name: str) -> str:
    """A base-model key as the model's safetensors spell it: PEFT's ``.base_layer`` dropped."""
    return name.replace(".base_layer.", ".")


def base_state(model: Any) -> dict[str, Any]:
    """The base model's tensors by checkpoint name: adapter tensors left out, a tied weight once.

    ``model`` is the ``Qwen3VLForConditionalGeneration`` (with or without LoRA layers injected).
    """
    tied = getattr(model, "all_tied_weights_keys", None) or {}  # {tied copy: source}, when tied
    state = {}
    for key, tensor in model.state_dict().items():
        if is_adapter_tensor(key):
            continue
        name = checkpoint_name(key)
        if name in tied:
            continue
        state[name] = tensor
    return state


def write_weights(state: Mapping[str, Any], directory: str | Path, *, dtype: Any = None, config: Any = None) -> Path:
    """Save tensors as safetensors (sharded with an index past 5 GB, as the Hub does), and ``config``
    (a transformers config) when given, as the folder ``directory``.

    The folder is written beside it and renamed into place, so ``directory`` never holds a partial
    set (a crash leaves a hidden temp folder); an earlier folder written here is replaced whole, no
    stale shard left. A folder holding anything else (a model's own folder, with its tokenizer) is
    refused, untouched."""
    import secrets
    import shutil

    from huggingface_hub import save_torch_state_dict

    directory = Path(directory)
    if directory.exists():
        foreign = [p.name for p in directory.iterdir() if not _written_here(p.name)]
        if foreign:
            raise ValueError(f"{directory} holds {foreign[:3]}: not a weights folder written here, left as it is")
    tmp = directory.with_name(f".{directory.name}.tmp-{secrets.token_hex(4)}")
    tmp.mkdir(parents=True)
    tensors = {n: (t if dtype is None else t.to(dtype)).detach().contiguous().cpu() for n, t in state.items()}
    save_torch_state_dict(tensors, tmp, max_shard_size="5GB")
    if config is not None:
        config.save_pretrained(str(tmp))
    if directory.exists():
        old = directory.with_name(f".{directory.name}.old-{secrets.token_hex(4)}")
        directory.rename(old)
        tmp.rename(directory)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(directory)
    return directory


def _written_here(name: str) -> bool:
    return name.endswith(".safetensors") or name in {"model.safetensors.index.json", "config.json"}


def read_weights(directory: str | Path, device: str = "cpu") -> dict[str, Any]:
    """Every tensor of every ``*.safetensors`` file in ``directory``, by name."""
    from safetensors.torch import load_file

    files = sorted(Path(directory).glob("*.safetensors"))
    if not files:
        raise ValueError(f"{directory} holds no .safetensors file")
    state: dict[str, Any] = {}
    for file in files:
        state.update(load_file(str(file), device=device))
    return state
