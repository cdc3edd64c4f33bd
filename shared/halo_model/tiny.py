"""A tiny random-weight Qwen3-VL, built offline, so every test run exercises the real serving path.

No model can be downloaded on the development and CI machines, yet vLLM must serve *a* Qwen3-VL
(vision tower, deepstack, interleaved mrope, runtime LoRA) for the policy client, LoRA hot-loading
and log-prob parity to be tested for real. This module builds one from a seed:

* ``Qwen3VLConfig`` with the real architecture at toy sizes. Constraints found on vLLM's CPU
  backend: text ``head_dim`` 32 (16 is rejected by CPU attention), ``sum(mrope_section) ==
  head_dim / 2``, vision ``out_hidden_size == text hidden_size``.
* A byte-level BPE tokenizer trained with ``tokenizers`` on text that covers the computer-use
  format (the tool definition, JSON keys, action names, digits, goals) plus Qwen's special tokens,
  pre-tokenized with Qwen2's regex (one digit per token, like the real tokenizer).
* Qwen3-VL's chat template (tools rendered inside the system turn, images as
  ``<|vision_start|><|image_pad|><|vision_end|>``), ``Qwen2VLImageProcessor`` with
  ``max_pixels`` small enough that a 1280x720 screenshot becomes ~100 vision tokens, and the
  Qwen3-VL video processor.

The result is cached under a directory keyed by a hash of this file, the parameters and the
training corpus, so a change to any of them builds a new model instead of silently reusing a stale
one. Building takes a few seconds; the directory is written atomically (temp dir + rename).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from halo.actions import ACTION_DOCS, TOOL_NAME, format_tool_call, tool_definition
from halo.schemas.actions import Action
from halo.schemas.env import Viewport

logger = logging.getLogger(__name__)

CHAT_TEMPLATE_PATH = Path(__file__).with_name("chat_template.jinja")

# Qwen3-VL's special tokens, in the order the real tokenizer numbers them after its BPE vocab.
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
# Tokens the real tokenizer has as (non-special) added tokens: the computer-use answer needs them.
ADDED_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]

# Qwen2/Qwen3's pre-tokenizer split: letters runs, single digits, punctuation runs, whitespace.
QWEN_SPLIT_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@dataclass(frozen=True)
class TinyModelParams:
    """Sizes of the tiny model. Changing any field changes the cache key."""

    vocab_size: int = 4096  # upper bound of the BPE vocab (the small corpus yields ~1,050 merges)
    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32  # CPU attention in vLLM rejects 16
    mrope_section: tuple[int, int, int] = (6, 5, 5)  # sums to head_dim / 2
    max_position_embeddings: int = 8192
    vision_depth: int = 2
    vision_hidden_size: int = 64
    vision_heads: int = 2
    vision_intermediate_size: int = 128
    deepstack_visual_indexes: tuple[int, ...] = (0, 1)
    num_position_embeddings: int = 576  # 24 x 24 learned vision position grid (interpolated)
    # Images are resized (aspect kept, sides floored to multiples of 32) to at most this many
    # pixels: a 1280x720 screenshot becomes 448x224 = 98 vision tokens (7 x 14 after the 2x2 merge,
    # measured by experiments/vision_diagnostic.py). The same processor config is read
    # by vLLM and by the learner, so both sides see identical pixels and token counts.
    max_pixels: int = 448 * 256
    min_pixels: int = 32 * 32 * 4
    # Weights of std 0.05 at width 128 give logits of std ~0.5: the untrained policy is close to
    # uniform over what the grammar allows (an unbiased explorer), yet lm_head can open gaps of
    # several nats once LoRA turns the final hidden state, so training can make it confident. At
    # 0.02 the largest reachable gap was ~3.6 nats (never above ~0.6 on one digit of ten), and at
    # width 64 the policy could not concentrate either (docs/trainer.md, learning).
    initializer_range: float = 0.05


def training_corpus() -> list[str]:
    """Text the BPE is trained on: everything the computer-use prompt and answers are made of."""
    lines: list[str] = []
    for width, height in ((1280, 720), (1920, 1080), (1024, 768)):
        lines.append(json.dumps(tool_definition(Viewport(width=width, height=height))))
    lines.append(
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        "For each function call, return a json object with function name and arguments within "
        '<tool_call></tool_call> XML tags:\n{"name": <function-name>, "arguments": <args-json-object>}'
    )
    lines += [f"{name}: {doc}" for name, doc in ACTION_DOCS.items()]
    examples = [
        Action(action="left_click", coordinate=(512, 348)),
        Action(action="double_click", coordinate=(90, 17)),
        Action(action="right_click", coordinate=(1000, 0)),
        Action(action="mouse_move", coordinate=(275, 640)),
        Action(action="triple_click", coordinate=(333, 777)),
        Action(action="left_click", element_id="compose"),
        Action(action="type", text="Meeting notes for Friday"),
        Action(action="key", keys=["ctrl", "a"]),
        Action(action="key", keys=["Enter"]),
        Action(action="scroll", pixels=-300),
        Action(action="hscroll", pixels=200),
        Action(action="wait", time=1.5),
        Action(action="terminate", status="success"),
        Action(action="terminate", status="failure"),
        Action(action="answer", text="The total is $42.99"),
    ]
    lines += [format_tool_call(a) for a in examples]
    lines += [a.short() for a in examples]
    goals = [
        "Send an email to alice@example.com with the subject 'Quarterly report' and say hello.",
        "Create a calendar event titled 'Team sync' on Monday at 10:00 AM.",
        "Search for wireless headphones on Omnizon, add the cheapest one to the cart and check out.",
        "Find a 2 bedroom home in San Francisco under $900,000 and save the listing.",
        "Mark every unread email from Bob as read, then archive the newsletter.",
        "Fill the form with your name and submit it. Click the button labelled OK.",
        "What is the price of the first product in the search results? Answer with the number.",
    ]
    lines += goals
    lines += [
        "You are a helpful assistant that operates a web browser to complete the user's task.",
        "Task goal: Previous actions (oldest first): Current screenshot: Step of",
        " ".join(str(i) for i in range(1001)),
        "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,;:!?'\"()[]{}<>@#$%^&*-_=+/\\|~`",
        TOOL_NAME,
    ]
    return lines


def _train_tokenizer(params: TinyModelParams, corpus: list[str]):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=params.vocab_size,
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    # Repetition weights the format tokens; the trainer is deterministic for a given input order.
    tok.train_from_iterator(corpus * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=params.max_position_embeddings,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )
    fast.add_special_tokens({"additional_special_tokens": SPECIAL_TOKENS})
    fast.add_tokens(ADDED_TOKENS)
    fast.chat_template = CHAT_TEMPLATE_PATH.read_text()
    return fast


def cache_key(params: TinyModelParams, seed: int) -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())
    h.update(CHAT_TEMPLATE_PATH.read_bytes())
    h.update(json.dumps(asdict(params), sort_keys=True).encode())
    h.update(json.dumps(training_corpus()).encode())
    h.update(str(seed).encode())
    return h.hexdigest()[:12]


def default_model_dir(params: TinyModelParams | None = None, seed: int = 0) -> Path:
    from halo.settings import HaloSettings

    key = cache_key(params or TinyModelParams(), seed)
    return HaloSettings().data_dir / "models" / f"tiny-qwen3vl-{key}"


def qwen3vl_config(params: TinyModelParams, tokenizer: Any, vocab_size: int) -> Any:
    """Qwen3-VL's architecture at ``params``' sizes, with ``tokenizer``'s special-token ids.

    The tiny model is built from it, and so is the benchmark's random-weight model at the 8B
    sizes (bench/gpu_learner_8b.py), so both exercise the same architecture settings.
    """
    from transformers import Qwen3VLConfig

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    return Qwen3VLConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": params.hidden_size,
            "intermediate_size": params.intermediate_size,
            "num_hidden_layers": params.num_hidden_layers,
            "num_attention_heads": params.num_attention_heads,
            "num_key_value_heads": params.num_key_value_heads,
            "head_dim": params.head_dim,
            "max_position_embeddings": params.max_position_embeddings,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 5_000_000.0,
                "mrope_section": list(params.mrope_section),
                "mrope_interleaved": True,
            },
            "initializer_range": params.initializer_range,
            "bos_token_id": None,
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
            "dtype": "float32",
        },
        vision_config={
            "depth": params.vision_depth,
            "hidden_size": params.vision_hidden_size,
            "num_heads": params.vision_heads,
            "intermediate_size": params.vision_intermediate_size,
            "out_hidden_size": params.hidden_size,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "num_position_embeddings": params.num_position_embeddings,
            "deepstack_visual_indexes": list(params.deepstack_visual_indexes),
            "initializer_range": params.initializer_range,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )


def _write_model(out: Path, params: TinyModelParams, seed: int) -> None:
    import torch
    from transformers import (
        GenerationConfig,
        Qwen2VLImageProcessor,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
    )
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    tokenizer = _train_tokenizer(params, training_corpus())
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    vocab = -(-len(tokenizer) // 64) * 64  # padded like real checkpoints; extra rows never sampled
    config = qwen3vl_config(params, tokenizer, vocab)
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config).to(torch.float32).eval()
    model.save_pretrained(out, safe_serialization=True)

    image_processor = Qwen2VLImageProcessor(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        size={"shortest_edge": params.min_pixels, "longest_edge": params.max_pixels},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    video_processor = Qwen3VLVideoProcessor(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        size={"shortest_edge": params.min_pixels, "longest_edge": params.max_pixels * 8},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    processor = Qwen3VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=tokenizer.chat_template,
    )
    processor.save_pretrained(out)
    # Sampling defaults stay out of generation_config.json on purpose: vLLM would apply them to
    # every request, and the client must be the one place that decides temperature and top-p.
    GenerationConfig(
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]], pad_token_id=ids["<|endoftext|>"]
    ).save_pretrained(out)
    (out / "halo_tiny_model.json").write_text(
        json.dumps({"seed": seed, "params": asdict(params), "key": cache_key(params, seed)}, indent=2)
    )


def build_tiny_model(out_dir: Path | str | None = None, seed: int = 0, params: TinyModelParams | None = None) -> Path:
    """Build (or reuse) the tiny Qwen3-VL and return its directory.

    ``out_dir`` defaults to ``<HALO_DATA_DIR>/models/tiny-qwen3vl-<hash>``. An existing complete
    build at that path is reused; an explicit ``out_dir`` whose marker holds another key is rebuilt.
    """
    params = params or TinyModelParams()
    out = Path(out_dir) if out_dir is not None else default_model_dir(params, seed)
    key = cache_key(params, seed)
    marker = out / "halo_tiny_model.json"
    if marker.exists():
        try:
            if json.loads(marker.read_text()).get("key") == key:
                return out
        except (OSError, json.JSONDecodeError):
            pass
        logger.info("tiny model at %s is from another builder version; rebuilding", out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        _write_model(tmp, params, seed)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except OSError:
        # Another process finished the same build first: keep theirs.
        shutil.rmtree(tmp, ignore_errors=True)
        if not (marker.exists() and json.loads(marker.read_text()).get("key") == key):
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("built tiny Qwen3-VL (seed %d) at %s", seed, out)
    return out
