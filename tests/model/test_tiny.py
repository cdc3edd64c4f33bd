"""The tiny Qwen3-VL: real architecture at toy size, deterministic, cached by content hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from halo_model.tiny import SPECIAL_TOKENS, TinyModelParams, build_tiny_model, cache_key, default_model_dir


def _digest(path: Path) -> str:
    return hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()


def test_config_respects_the_cpu_backend_constraints(tiny_model_dir: Path) -> None:
    cfg = json.loads((tiny_model_dir / "config.json").read_text())
    text, vision = cfg["text_config"], cfg["vision_config"]
    assert cfg["architectures"] == ["Qwen3VLForConditionalGeneration"]
    assert text["head_dim"] == 32  # vLLM's CPU attention rejects 16
    assert sum(text["rope_parameters"]["mrope_section"]) == text["head_dim"] // 2
    assert text["rope_parameters"]["mrope_interleaved"] is True
    assert vision["out_hidden_size"] == text["hidden_size"]
    assert len(vision["deepstack_visual_indexes"]) >= 1
    for name in ("tokenizer.json", "chat_template.jinja", "processor_config.json", "generation_config.json"):
        assert (tiny_model_dir / name).exists(), name


def test_tokenizer_has_the_special_tokens_and_ids_match_the_config(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    cfg = json.loads((tiny_model_dir / "config.json").read_text())
    ids = {t: tok.convert_tokens_to_ids(t) for t in [*SPECIAL_TOKENS, "<tool_call>", "</tool_call>"]}
    assert len(set(ids.values())) == len(ids)
    assert cfg["image_token_id"] == ids["<|image_pad|>"]
    assert cfg["vision_start_token_id"] == ids["<|vision_start|>"]
    assert max(ids.values()) < cfg["text_config"]["vocab_size"]
    # one token per digit, as Qwen's tokenizer does
    assert len(tok.encode("512", add_special_tokens=False)) == 3
    text = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [5, 7]}}\n</tool_call>'
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text


def test_default_dir_is_keyed_by_hash(tiny_model_dir: Path) -> None:
    assert tiny_model_dir == default_model_dir()
    assert tiny_model_dir.name.endswith(cache_key(TinyModelParams(), 0))
    assert cache_key(TinyModelParams(), 1) != cache_key(TinyModelParams(), 0)
    assert build_tiny_model() == tiny_model_dir  # reused, not rebuilt


@pytest.mark.slow
def test_build_is_deterministic_from_the_seed(tmp_path: Path, tiny_model_dir: Path) -> None:
    again = build_tiny_model(tmp_path / "a", seed=0)
    other = build_tiny_model(tmp_path / "b", seed=1)
    assert _digest(again) == _digest(tiny_model_dir)
    assert (again / "tokenizer.json").read_bytes() == (tiny_model_dir / "tokenizer.json").read_bytes()
    assert _digest(other) != _digest(tiny_model_dir)
