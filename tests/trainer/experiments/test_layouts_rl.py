"""experiments/layouts_rl.py: its sampler stays in the grammar the learner replays, and its readings."""

from __future__ import annotations

import json

import pytest
import torch

from halo.prompts import tool_call_regex
from halo.schemas import Action, Viewport
from halo.settings.trainer import LearnerConfig
from halo_model.grammar import STOP_TOKENS, grammar_masks
from halo_model.inputs import prompt_inputs
from halo_model.loading import load_model, load_processor
from halo_sites.tasks import get_task
from halo_trainer.learner.learner import Learner
from tests.conftest import noise_png
from tests.script_module import load_script


@pytest.fixture(scope="module")
def layouts_rl():
    return load_script("experiments/layouts_rl.py")


@pytest.mark.slow  # up to 256 tokens a draw from the random-weight model, each replayed: ~10-30 s on 2 cores
def test_sampled_answers_are_ones_the_learner_replays_under_the_grammar(layouts_rl, tiny_model_dir) -> None:
    """What the script samples must be what ``grammar_masks`` accepts (the learner's replay of
    vLLM's grammar): each token allowed at its position, each completion closed by a stop token or
    cut at the budget; greedy is one answer, the same on a second call."""
    torch.manual_seed(0)
    processor = load_processor(tiny_model_dir)
    learner = Learner(load_model(tiny_model_dir), LearnerConfig(lora_r=8, lora_alpha=16, max_tokens=256))
    stops = [processor.tokenizer.convert_tokens_to_ids(t) for t in STOP_TOKENS]
    enc = prompt_inputs(processor, "Click the Submit button.", [], [noise_png(128, 72, seed=2)])
    drawn = layouts_rl.sample(learner, processor, enc, 4, 1.0, stops)
    allowed = grammar_masks(processor.tokenizer, tool_call_regex(), drawn, learner.vocab_size)
    for row, completion in enumerate(drawn):
        assert completion[-1] in stops or len(completion) == layouts_rl.MAX_TOKENS
        assert all(allowed[row, t, tok] for t, tok in enumerate(completion))
    greedy = layouts_rl.sample(learner, processor, enc, 1, None, stops)
    assert greedy == layouts_rl.sample(learner, processor, enc, 1, None, stops)
    text = layouts_rl.answer(processor, greedy[0], 0, stops).text
    assert "<|im_end|>" not in text and text.startswith("<tool_call>")


def test_a_click_is_read_as_the_nearest_layouts_button_and_anything_else_as_none(layouts_rl) -> None:
    from halo.actions import from_pixels
    from halo.policy_results import Candidate

    slots = get_task("local.playground-2").config["slots"]

    def cand(action: Action) -> Candidate:
        return Candidate(index=0, text="", action=action, parse_error=None, token_ids=[], logprobs=[])

    for k, (x, y) in enumerate(slots):
        click = Action(action="left_click", coordinate=from_pixels((x + 20, y - 10), Viewport()))
        assert layouts_rl.nearest_slot(cand(click), slots) == k
    assert layouts_rl.nearest_slot(cand(Action(action="scroll", coordinate=(500, 500), pixels=-300)), slots) is None
    assert layouts_rl.nearest_slot(Candidate.parse(0, "no call"), slots) is None


def test_the_summary_reads_blocks_of_updates(layouts_rl, tmp_path) -> None:
    setting = {"n": 2}
    lines = [{"kind": "eval", "update": 0, "hits": [True, False, False, False], "greedy": [], "setting": setting}]
    for u in range(4):
        lines.append(
            {
                "kind": "update",
                "update": u,
                "seconds": 2.0 * u,
                "hits": [u, 0, 0, 1],
                "pointer_clicks": 4,
                "nearest_own": 1 + (u >= 2),
                "identical": 2 - (u == 3),
                "entropy": 0.5,
                "setting": setting,
            }
        )
    lines.append({"kind": "eval", "update": 2, "hits": [True] * 4, "greedy": [], "setting": setting})
    f = tmp_path / "run.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    first, second = layouts_rl.summary([f], block=2)
    assert first["hits_per_layout"] == [1, 0, 0, 2] and second["hits_per_layout"] == [5, 0, 0, 2]
    assert (first["nearest_own_share"], second["nearest_own_share"]) == (0.25, 0.5)
    assert (first["identical_share"], second["identical_share"]) == (1.0, 0.75)
    assert (first["greedy_solved"], second["greedy_solved"]) == ([1], [4])
    assert first["seconds_per_update"] == 2.0
