"""halo.prompts: one rendering for vLLM and the learner; bounded history; the answer regex."""

from __future__ import annotations

import re

import pytest

from halo.actions import format_tool_call, parse_action, tool_definition
from halo.prompts import (
    SYSTEM_ROLE,
    build_messages,
    history_lines,
    openai_messages,
    system_prompt,
    tool_call_regex,
)
from halo.schemas.actions import Action
from halo.schemas.env import Viewport


def test_history_is_bounded_and_numbered_absolutely() -> None:
    history = [f"left_click(coordinate=[{i}, {i}])" for i in range(12)]
    lines = history_lines(history, limit=3)
    assert lines == [
        "(9 earlier actions omitted)",
        "10. left_click(coordinate=[9, 9])",
        "11. left_click(coordinate=[10, 10])",
        "12. left_click(coordinate=[11, 11])",
    ]
    assert history_lines([], limit=3) == []
    assert history_lines([Action(action="key", keys=["Enter"])]) == ["1. key(keys=['Enter'])"]


def test_system_prompt_carries_the_viewport_tool() -> None:
    text = system_prompt(Viewport(width=1024, height=768))
    assert "1024x768" in text and "<tools>" in text and '"name": "computer_use"' in text


def test_openai_and_processor_messages_differ_only_in_image_parts() -> None:
    plain = build_messages("Send mail", ["a", "b"], n_previous_images=1)
    urls = openai_messages("Send mail", ["a", "b"], [b"png0", b"png1"])
    strip = [[{k: v for k, v in p.items() if p["type"] == "text"} for p in m["content"]] for m in plain]
    strip_urls = [[{k: v for k, v in p.items() if p["type"] == "text"} for p in m["content"]] for m in urls]
    assert strip == strip_urls
    assert [p["type"] for p in urls[1]["content"]] == ["text", "image_url", "text", "image_url"]
    with pytest.raises(ValueError):
        openai_messages("goal", [], [])


def test_template_renders_tools_like_the_embedded_system_prompt(tiny_model_dir) -> None:
    """Passing tools= to the chat template gives the same text as halo.prompts' system turn."""
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(str(tiny_model_dir))
    embedded = processor.apply_chat_template(
        build_messages("Find a home", []), tokenize=False, add_generation_prompt=True
    )
    messages = build_messages("Find a home", [])
    messages[0]["content"] = [
        {"type": "text", "text": "You are a helpful assistant that operates a web browser to complete the user's task."}
    ]
    via_tools = processor.apply_chat_template(
        messages, tools=[tool_definition(Viewport())], tokenize=False, add_generation_prompt=True
    )
    assert embedded == via_tools
    assert embedded.endswith("<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize(
    "action",
    [
        Action(action="left_click", coordinate=(0, 1000)),
        Action(action="double_click", coordinate=(512, 48)),
        Action(action="type", text="Quarterly report"),
        Action(action="key", keys=["Enter", "Tab"]),
        Action(action="scroll", pixels=-300),
        Action(action="terminate", status="success"),
    ],
)
def test_tool_call_regex_accepts_the_canonical_rendering(action: Action) -> None:
    text = format_tool_call(action)
    assert re.fullmatch(tool_call_regex(), text)
    assert parse_action(text) == action


def test_tool_call_regex_rejects_what_the_executor_cannot_take() -> None:
    rx = tool_call_regex()
    assert not re.fullmatch(rx, format_tool_call(Action(action="left_click", element_id="compose")))
    assert not re.fullmatch(
        rx,
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1001, 3]}}\n</tool_call>',
    )


def test_without_the_tool_description_the_system_turn_is_the_role_line() -> None:
    assert system_prompt(describe_tools=False) == SYSTEM_ROLE
    full, short = build_messages("Send mail", ["a"]), build_messages("Send mail", ["a"], describe_tools=False)
    assert short[1] == full[1]  # the user turn (goal, history, screenshot) is untouched
    assert short[0]["content"][0]["text"] == SYSTEM_ROLE and "<tools>" in full[0]["content"][0]["text"]
    urls = openai_messages("Send mail", ["a"], [b"png"], describe_tools=False)
    assert urls[0] == short[0]
