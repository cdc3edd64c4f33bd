"""The computer-use protocol: every valid answer parses, every malformed one is a typed error."""

from __future__ import annotations

import json
import random

import pytest

from halo.actions import (
    format_tool_call,
    from_pixels,
    parse_action,
    to_pixels,
    tool_call_json_schema,
    tool_definition,
)
from halo.schemas import Action, ActionParseError, ActionType, ParseErrorReason, Viewport

VP = Viewport(width=1280, height=720)

VALID = [
    {"action": "left_click", "coordinate": [500, 300]},
    {"action": "left_click", "element_id": "compose"},
    {"action": "double_click", "coordinate": [0, 1000]},
    {"action": "triple_click", "coordinate": [1000, 0]},
    {"action": "right_click", "coordinate": [1, 2]},
    {"action": "middle_click", "coordinate": [3, 4]},
    {"action": "mouse_move", "coordinate": [999, 999]},
    {"action": "left_click_drag", "coordinate": [700, 700]},
    {"action": "left_click_drag", "start_coordinate": [10, 10], "coordinate": [700, 700]},
    {"action": "type", "text": "hello world"},
    {"action": "type", "text": "bob@example.com", "element_id": "to"},
    {"action": "key", "keys": ["ctrl", "a"]},
    {"action": "key", "keys": ["Enter"]},
    {"action": "scroll", "pixels": -300},
    {"action": "hscroll", "pixels": 200},
    {"action": "wait", "time": 1.5},
    {"action": "wait"},
    {"action": "terminate", "status": "success"},
    {"action": "terminate", "status": "failure"},
    {"action": "answer", "text": "42"},
]


def wrap(args: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": args}) + "\n</tool_call>"


@pytest.mark.parametrize("args", VALID, ids=lambda a: a["action"])
def test_valid_answers_parse_in_every_accepted_form(args):
    forms = [
        wrap(args),
        "I will act now.\n" + wrap(args),  # reasoning before the call
        json.dumps({"name": "computer_use", "arguments": args}),  # structured-output JSON
        json.dumps({"name": "computer_use", "arguments": json.dumps(args)}),  # OpenAI string args
        json.dumps(args),  # bare arguments
        "```json\n" + json.dumps(args) + "\n```",
        wrap(args).encode(),
    ]
    for form in forms:
        action = parse_action(form)
        assert isinstance(action, Action), (form, action)
        assert action.action == ActionType(args["action"])


@pytest.mark.parametrize("args", VALID, ids=lambda a: a["action"])
def test_format_then_parse_round_trips(args):
    action = Action.model_validate(args)
    assert parse_action(format_tool_call(action)) == action


def test_float_coordinates_and_key_strings_are_normalised():
    a = parse_action(wrap({"action": "left_click", "coordinate": [500.4, 299.6]}))
    assert isinstance(a, Action) and a.coordinate == (500, 300)
    k = parse_action(wrap({"action": "key", "keys": "ctrl+a"}))
    assert isinstance(k, Action) and k.keys == ["ctrl", "a"]


def _malformed_answers() -> list[tuple[object, set[ParseErrorReason]]]:
    """Several hundred malformed answers, each with the reasons that may describe it."""
    R = ParseErrorReason
    cases: list[tuple[object, set[ParseErrorReason]]] = [
        ("", {R.EMPTY}),
        ("   \n\t ", {R.EMPTY}),
        (b"\xff\xfe\xfa", {R.NOT_UTF8}),
        (b'<tool_call>{"name": "computer_use"\x80}</tool_call>', {R.NOT_UTF8}),
        ("x" * 100_000, {R.TOO_LONG}),
        (wrap({"action": "type", "text": "a" * 100_000}), {R.TOO_LONG}),
        ("click the button please", {R.NO_TOOL_CALL}),
        ("[1, 2, 3]", {R.NO_TOOL_CALL}),
        ('<tool_call>["left_click"]</tool_call>', {R.NOT_AN_OBJECT}),
        ("<tool_call>42</tool_call>", {R.NOT_AN_OBJECT}),
        ('<tool_call>"left_click"</tool_call>', {R.NOT_AN_OBJECT}),
        (wrap({"action": "left_click", "coordinate": [1, 1]}) * 2, {R.MULTIPLE_CALLS}),
        (json.dumps({"name": "browser", "arguments": {"action": "left_click"}}), {R.WRONG_TOOL}),
        (json.dumps({"arguments": {"action": "left_click"}}), {R.WRONG_TOOL}),
        (json.dumps({"name": "computer_use", "arguments": "{not json"}), {R.BAD_JSON}),
        (json.dumps({"name": "computer_use", "arguments": [1, 2]}), {R.BAD_ARGUMENTS}),
        (json.dumps({"name": "computer_use", "arguments": None}), {R.BAD_ARGUMENTS}),
        ("<tool_call>" + "[" * 5000 + "</tool_call>", {R.BAD_JSON, R.NOT_AN_OBJECT}),
        ("<tool_call>" + '{"a":' * 2000 + "1" + "}" * 2000 + "</tool_call>", {R.BAD_JSON, R.UNKNOWN_ACTION}),
    ]
    # truncated JSON: every prefix of a valid call that cuts the JSON open
    full = wrap({"action": "left_click", "coordinate": [512, 384]})
    body_start = full.index("{")
    for cut in range(body_start + 1, full.index("\n</tool_call>") - 1):
        cases.append((full[:cut], {R.BAD_JSON, R.NO_TOOL_CALL}))
    # unknown actions and wrong action types
    for name in ["click", "LEFT_CLICK", "tap", "scroll_down", "screenshot", "navigate", "", " left_click", "type "]:
        cases.append((wrap({"action": name, "coordinate": [1, 1]}), {R.UNKNOWN_ACTION}))
    for value in [None, 1, 1.5, True, [], {}, ["left_click"]]:
        cases.append((wrap({"action": value}), {R.UNKNOWN_ACTION}))
    # wrong argument types and out-of-range values
    bad_args = [
        {"action": "left_click"},
        {"action": "left_click", "coordinate": [1001, 5]},
        {"action": "left_click", "coordinate": [-1, 5]},
        {"action": "left_click", "coordinate": [5]},
        {"action": "left_click", "coordinate": [1, 2, 3]},
        {"action": "left_click", "coordinate": "500,300"},
        {"action": "left_click", "coordinate": ["a", "b"]},
        {"action": "left_click", "coordinate": [True, False]},
        {"action": "left_click", "coordinate": {"x": 1, "y": 2}},
        {"action": "left_click", "coordinate": [1e9, 1]},
        {"action": "left_click", "coordinate": [1, 1], "element_id": "x"},
        {"action": "left_click", "element_id": ""},
        {"action": "left_click", "element_id": "bad id with spaces"},
        {"action": "left_click", "element_id": 12},
        {"action": "left_click", "coordinate": [1, 1], "unknown": 1},
        {"action": "left_click_drag"},
        {"action": "type"},
        {"action": "type", "text": 123},
        {"action": "type", "text": None},
        {"action": "type", "text": "x" * 2001},
        {"action": "key"},
        {"action": "key", "keys": []},
        {"action": "key", "keys": [1, 2]},
        {"action": "key", "keys": ["a"] * 7},
        {"action": "key", "keys": [""]},
        {"action": "scroll"},
        {"action": "scroll", "pixels": "down"},
        {"action": "scroll", "pixels": 10**9},
        {"action": "hscroll"},
        {"action": "wait", "time": -1},
        {"action": "wait", "time": 1000},
        {"action": "wait", "time": "soon"},
        {"action": "terminate"},
        {"action": "terminate", "status": "done"},
        {"action": "answer"},
        {"action": "answer", "text": ["a"]},
        {"action": "scroll", "pixels": 10, "element_id": "x"},
        {"action": "terminate", "status": "success", "element_id": "x"},
    ]
    for args in bad_args:
        cases.append((wrap(args), {R.BAD_ARGUMENTS}))
        cases.append((json.dumps(args), {R.BAD_ARGUMENTS}))
    # random garbage, deterministic
    rng = random.Random(1234)
    alphabet = '{}[]":,<>/tool_call 0123456789abcdefxyz\n\\'
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120)))
        cases.append((text, set(ParseErrorReason)))
    for _ in range(50):
        cases.append((bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))), set(ParseErrorReason)))
    return cases


MALFORMED = _malformed_answers()


def test_there_are_several_hundred_malformed_cases():
    assert len(MALFORMED) >= 400


@pytest.mark.parametrize("index", range(len(MALFORMED)))
def test_malformed_answer_is_a_typed_error_never_an_exception(index):
    answer, reasons = MALFORMED[index]
    result = parse_action(answer)
    if isinstance(result, Action):
        # random garbage may, rarely, be valid; it must then really be a valid action
        assert reasons == set(ParseErrorReason), (answer, result)
        return
    assert isinstance(result, ActionParseError)
    assert result.reason in reasons, (answer, result)
    assert 0 < len(result.detail) <= 500


@pytest.mark.parametrize("viewport", [VP, Viewport(width=1920, height=1080), Viewport(width=800, height=600)])
def test_coordinate_mapping_round_trips_within_one_pixel(viewport):
    for px in range(0, viewport.width, 37):
        for py in range(0, viewport.height, 29):
            back = to_pixels(from_pixels((px, py), viewport), viewport)
            assert abs(back[0] - px) <= viewport.width / 1000 + 1 and abs(back[1] - py) <= viewport.height / 1000 + 1
    assert to_pixels((0, 0), viewport) == (0, 0)
    assert to_pixels((1000, 1000), viewport) == (viewport.width - 1, viewport.height - 1)
    assert to_pixels((500, 500), viewport) == (viewport.width // 2, viewport.height // 2)


def test_tool_definition_states_the_relative_coordinates_and_every_action():
    tool = tool_definition(VP)
    assert tool["function"]["name"] == "computer_use"
    desc = tool["function"]["description"]
    assert "1280x720" in desc and "0 to 1000" in desc
    assert set(tool["function"]["parameters"]["properties"]["action"]["enum"]) == {a.value for a in ActionType}


def test_structured_output_schema_only_admits_parseable_actions():
    schema = tool_call_json_schema()
    assert schema["properties"]["name"] == {"const": "computer_use"}
    examples = [
        {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [0, 1000]}},
        {"name": "computer_use", "arguments": {"action": "type", "text": "abc"}},
        {"name": "computer_use", "arguments": {"action": "key", "keys": ["Enter"]}},
        {"name": "computer_use", "arguments": {"action": "scroll", "pixels": 100}},
        {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}},
    ]
    for example in examples:
        assert isinstance(parse_action(json.dumps(example)), Action)
