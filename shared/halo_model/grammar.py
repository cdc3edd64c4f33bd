"""Replay of vLLM's structured-output grammar: the allowed tokens at each completion position.

vLLM masks the logits with the grammar before it computes the behaviour log-probs it returns, so
the learner must apply the same masks to compare like with like (``completion_logprobs(...,
allowed=...)``). Without structured outputs (the 8B default) no mask is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# The tokens that end a completion in vLLM (the tiny model's and Qwen3-VL's generation config):
# the grammar's end, as vLLM's structured-output backend is told.
STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")


def grammar_masks(
    tokenizer: Any,
    regex: str,
    completions: Sequence[Sequence[int]],
    vocab_size: int,
) -> torch.Tensor:
    """Allowed-token masks ``[B, C, vocab_size]`` of a regex grammar along each completion.

    Replays xgrammar exactly as vLLM's structured-output backend drives it (``from_huggingface``
    tokenizer info over the model's vocab size, ``STOP_TOKENS`` as the grammar's end).
    Positions after the grammar terminates (and padding) allow everything.
    """
    import torch
    import xgrammar as xgr

    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
    compiled = xgr.GrammarCompiler(info, max_threads=1).compile_regex(regex)
    width = max(len(c) for c in completions)
    allowed = torch.ones((len(completions), width, vocab_size), dtype=torch.bool)
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    stops = [tokenizer.convert_tokens_to_ids(t) for t in STOP_TOKENS]
    for b, completion in enumerate(completions):
        matcher = xgr.GrammarMatcher(compiled, override_stop_tokens=stops)
        for t, token in enumerate(completion):
            if matcher.is_terminated():
                break
            matcher.fill_next_token_bitmask(bitmask)
            row = torch.zeros((1, vocab_size), dtype=torch.float32)
            xgr.apply_token_bitmask_inplace(row, bitmask)  # disallowed -> -inf
            allowed[b, t] = torch.isfinite(row[0])
            if not matcher.accept_token(int(token)):
                raise ValueError(f"completion {b}: token {token} at {t} is not allowed by the grammar")
    return allowed
