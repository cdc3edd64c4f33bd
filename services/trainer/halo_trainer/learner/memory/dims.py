"""The sizes of a Qwen3-VL model that the learner's memory plan (``halo_trainer.learner.memory.plan``)
depends on: ``ModelDims`` from its config.json (parameter counts, LoRA's, the full-weight modules',
the KV cache's), the 8B's published sizes (``QWEN3_VL_8B``, its image budget) and the vision patches
of one screenshot after Qwen's resize (``image_patches``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GIB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
LAST_VISION_BLOCKS = 2  # halo_model.full_weights.LAST_BLOCKS (the vision_last_blocks preset)


@dataclass(frozen=True)
class ModelDims:
    """The sizes of a Qwen3-VL model that its memory depends on (its config.json)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vision_depth: int
    vision_hidden_size: int
    vision_heads: int
    vision_intermediate_size: int
    patch_size: int = 16
    temporal_patch_size: int = 2
    spatial_merge_size: int = 2
    in_channels: int = 3
    num_position_embeddings: int = 2304
    deepstack_layers: int = 3
    tie_word_embeddings: bool = False

    @classmethod
    def from_config(cls, config: Any) -> ModelDims:
        """From a transformers ``Qwen3VLConfig`` or its config.json as a dict."""

        def get(obj: Any, name: str, default: Any = None) -> Any:
            value = obj.get(name, default) if isinstance(obj, Mapping) else getattr(obj, name, default)
            return default if value is None else value

        text, vision = get(config, "text_config"), get(config, "vision_config")
        heads = get(text, "num_attention_heads")
        return cls(
            vocab_size=get(text, "vocab_size"),
            hidden_size=get(text, "hidden_size"),
            intermediate_size=get(text, "intermediate_size"),
            num_hidden_layers=get(text, "num_hidden_layers"),
            num_attention_heads=heads,
            num_key_value_heads=get(text, "num_key_value_heads", heads),
            head_dim=get(text, "head_dim", get(text, "hidden_size") // heads),
            vision_depth=get(vision, "depth"),
            vision_hidden_size=get(vision, "hidden_size"),
            vision_heads=get(vision, "num_heads"),
            vision_intermediate_size=get(vision, "intermediate_size"),
            patch_size=get(vision, "patch_size", 16),
            temporal_patch_size=get(vision, "temporal_patch_size", 2),
            spatial_merge_size=get(vision, "spatial_merge_size", 2),
            in_channels=get(vision, "in_channels", 3),
            num_position_embeddings=get(vision, "num_position_embeddings", 2304),
            deepstack_layers=len(get(vision, "deepstack_visual_indexes", ())),
            tie_word_embeddings=bool(get(config, "tie_word_embeddings", get(text, "tie_word_embeddings", False))),
        )

    @classmethod
    def from_pretrained(cls, model: str | Path) -> ModelDims:
        """From a model folder or Hugging Face name (its config.json only, no weights)."""
        from transformers import AutoConfig

        return cls.from_config(AutoConfig.from_pretrained(str(model)))

    # -- parameter counts (tests check them against the model transformers builds) ----------------
    def _linear(self, n_in: int, n_out: int, bias: bool = False) -> int:
        return n_in * n_out + (n_out if bias else 0)

    def projection_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer of a decoder layer: what LoRA adapts."""
        h, q, kv, i = (
            self.hidden_size,
            self.num_attention_heads * self.head_dim,
            self.num_key_value_heads * self.head_dim,
            self.intermediate_size,
        )
        return {
            "q_proj": (h, q),
            "k_proj": (h, kv),
            "v_proj": (h, kv),
            "o_proj": (q, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    def text_params(self) -> int:
        layer = sum(self._linear(a, b) for a, b in self.projection_shapes().values())
        layer += 2 * self.head_dim + 2 * self.hidden_size  # q/k norms, the two RMSNorms
        embeddings = self.vocab_size * self.hidden_size
        head = 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size
        return embeddings + self.num_hidden_layers * layer + self.hidden_size + head

    def vision_block_params(self) -> int:
        vh, vi = self.vision_hidden_size, self.vision_intermediate_size
        return (
            4 * vh
            + self._linear(vh, 3 * vh, True)
            + self._linear(vh, vh, True)
            + self._linear(vh, vi, True)
            + (self._linear(vi, vh, True))
        )

    def vision_merger_params(self) -> int:
        """The merger and the DeepStack mergers: the projections into the language model."""
        merged = self.vision_hidden_size * self.spatial_merge_size**2

        def merger(norm_width: int) -> int:
            return 2 * norm_width + self._linear(merged, merged, True) + self._linear(merged, self.hidden_size, True)

        return merger(self.vision_hidden_size) + self.deepstack_layers * merger(merged)

    def vision_params(self) -> int:
        patch = self.in_channels * self.temporal_patch_size * self.patch_size**2 * self.vision_hidden_size
        patch += self.vision_hidden_size  # the patch embedding's bias
        positions = self.num_position_embeddings * self.vision_hidden_size
        return patch + positions + self.vision_depth * self.vision_block_params() + self.vision_merger_params()

    def params(self) -> int:
        return self.text_params() + self.vision_params()

    def lora_params(self, rank: int, targets: Sequence[str]) -> int:
        shapes = self.projection_shapes()
        return self.num_hidden_layers * sum(rank * sum(shapes[t]) for t in targets if t in shapes)

    def full_weight_params(self, names: Sequence[str]) -> tuple[int, int]:
        """(parameters trained in full, vision blocks whose activations the backward keeps) for
        ``full_weights`` presets and module names (``halo_model.full_weights``)."""
        total, blocks = 0, 0
        for name in names:
            if name == "all":
                return self.params(), self.vision_depth
            if name == "vision":
                total += self.vision_params()
                blocks = self.vision_depth
            elif name == "vision_merger":
                total += self.vision_merger_params()
            elif name == "vision_last_blocks":
                n = min(LAST_VISION_BLOCKS, self.vision_depth)
                total += n * self.vision_block_params()
                blocks = max(blocks, n)
            elif name.startswith("model.visual.blocks."):
                index = int(name.removeprefix("model.visual.blocks.").split(".")[0])
                total += self.vision_block_params()
                blocks = max(blocks, self.vision_depth - index)
            elif name == "lm_head":
                total += self.vocab_size * self.hidden_size
            else:  # another module name: counted as the whole vision tower, an upper bound
                total += self.vision_params()
                blocks = self.vision_depth
        return total, blocks

    def kv_bytes_per_token(self, dtype: str = "bfloat16") -> int:
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * DTYPE_BYTES[dtype]


# Qwen3-VL-8B-Instruct's config.json: the one declaration (bench/gpu_learner_8b.py builds a random model of these sizes).
QWEN3_VL_8B = ModelDims(
    vocab_size=151936,
    hidden_size=4096,
    intermediate_size=12288,
    num_hidden_layers=36,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    vision_depth=27,
    vision_hidden_size=1152,
    vision_heads=16,
    vision_intermediate_size=4304,
    num_position_embeddings=2304,
    deepstack_layers=3,
)
QWEN3_VL_8B_MAX_PIXELS, QWEN3_VL_8B_MIN_PIXELS = 16777216, 65536  # its preprocessor_config.json


def image_patches(
    width: int, height: int, *, max_pixels: int, min_pixels: int, patch_size: int = 16, merge: int = 2
) -> int:
    """Vision patches of one screenshot after Qwen's ``smart_resize`` (a token is merge**2 patches)."""
    factor = patch_size * merge
    h, w = round(height / factor) * factor, round(width / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h, w = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return (h // patch_size) * (w // patch_size)
