"""The computer-use action protocol: tool definition, parsing model answers, coordinate mapping.

Qwen3-VL answers ``<tool_call>\\n{"name": "computer_use", "arguments": {...}}\\n</tool_call>``
with coordinates relative to the screen, 0..1000 on each axis. ``parse_action`` turns any text
(or bytes) into an ``Action`` or an ``ActionParseError`` with a reason; it never raises, because a
malformed answer is a fact the reward service scores, not a crash.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from halo.schemas.actions import (
    COORD_MAX,
    Action,
    ActionParseError,
    ActionType,
    ParseErrorReason,
)
from halo.schemas.env import Viewport

TOOL_NAME = "computer_use"
# The actions whose left-button press fires a DOM click event at their coordinate: what answers a
# click task (a right or middle click does not).
LEFT_CLICKS = frozenset({"left_click", "double_click", "triple_click"})
MAX_ANSWER_CHARS = 16_384  # an answer longer than this is degenerate sampling, not an action

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)

ACTION_DOCS = {
    "key": "Press keys in order and release them in reverse, e.g. keys=['ctrl', 'a'] or ['Enter'].",
    "type": "Type a string of text into the focused field (or the element given by element_id).",
    "mouse_move": "Move the cursor to a coordinate.",
    "left_click": "Click the left mouse button at a coordinate (or on element_id).",
    "left_click_drag": "Click and drag from the current cursor position to a coordinate.",
    "right_click": "Click the right mouse button at a coordinate.",
    "middle_click": "Click the middle mouse button at a coordinate.",
    "double_click": "Double-click the left mouse button at a coordinate.",
    "triple_click": "Triple-click the left mouse button at a coordinate (selects a line).",
    "scroll": "Scroll vertically by 'pixels' (positive scrolls down) at the cursor position.",
    "hscroll": "Scroll horizontally by 'pixels' (positive scrolls right).",
    "wait": "Wait 'time' seconds for the page to change.",
    "terminate": "End the task with status 'success' or 'failure'.",
    "answer": "Give the final answer 'text' to a question the task asked.",
}


def tool_definition(viewport: Viewport) -> dict[str, Any]:
    """The ``computer_use`` function in OpenAI tools format, with Qwen3-VL's relative coordinates."""
    description = (
        "Use a mouse and keyboard to interact with a web browser, and take screenshots.\n"
        "* The screen shows one browser tab; there is no address bar, terminal or desktop.\n"
        f"* The screenshot is {viewport.width}x{viewport.height} pixels, but coordinates are "
        f"relative: [x, y] with x and y from 0 to {COORD_MAX} (0,0 is top-left, "
        f"{COORD_MAX},{COORD_MAX} is bottom-right).\n"
        "* Click in the middle of an element, not on its edge.\n"
        "* Elements of the accessibility tree may be addressed by 'element_id' instead of "
        "'coordinate'.\n"
        "* Actions:\n" + "\n".join(f"    * `{name}`: {doc}" for name, doc in ACTION_DOCS.items())
    )
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": description,
            "parameters": {
                "type": "object",
                "required": ["action"],
                "properties": {
                    "action": {"type": "string", "enum": [a.value for a in ActionType]},
                    "coordinate": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "description": "[x, y], 0..1000",
                    },
                    "element_id": {"type": "string", "description": "bid of an accessibility-tree node"},
                    "text": {"type": "string"},
                    "keys": {"type": "array", "items": {"type": "string"}},
                    "pixels": {"type": "integer"},
                    "time": {"type": "number"},
                    "status": {"type": "string", "enum": ["success", "failure"]},
                },
            },
        },
    }


def tool_call_json_schema() -> dict[str, Any]:
    """JSON schema of one ``computer_use`` call, for vLLM's ``structured_outputs``.

    Kept deliberately narrow (coordinates as a 2-array of 0..1000 integers, no element ids) so a
    random-weight model constrained by it always emits something the environment can execute.
    """
    coord = {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": COORD_MAX},
        "minItems": 2,
        "maxItems": 2,
    }
    pointer = ["left_click", "double_click", "right_click", "mouse_move", "triple_click"]
    variants = [
        {
            "properties": {"action": {"enum": pointer}, "coordinate": coord},
            "required": ["action", "coordinate"],
        },
        {
            "properties": {"action": {"const": "type"}, "text": {"type": "string", "maxLength": 40}},
            "required": ["action", "text"],
        },
        {
            "properties": {
                "action": {"const": "key"},
                "keys": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"enum": ["Enter", "Tab", "Escape", "Backspace", "ArrowDown", "ArrowUp"]},
                },
            },
            "required": ["action", "keys"],
        },
        {
            "properties": {
                "action": {"const": "scroll"},
                "pixels": {"type": "integer", "minimum": -1000, "maximum": 1000},
            },
            "required": ["action", "pixels"],
        },
        {
            "properties": {"action": {"const": "terminate"}, "status": {"enum": ["success", "failure"]}},
            "required": ["action", "status"],
        },
    ]
    for v in variants:
        v["type"] = "object"
        v["additionalProperties"] = False
    return {
        "type": "object",
        "properties": {"name": {"const": TOOL_NAME}, "arguments": {"anyOf": variants}},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def format_tool_call(action: Action) -> str:
    """Render an action the way Qwen3-VL writes it (the inverse of ``parse_action``)."""
    payload = {"name": TOOL_NAME, "arguments": action.arguments()}
    return f"<tool_call>\n{json.dumps(payload, ensure_ascii=False)}\n</tool_call>"


INVALID_ACTION_KEY = "<invalid>"


def canonical_action(action: Action | None) -> str:
    """One string per distinct action: answers with the same string do the same thing to the page.

    Arguments are compared exactly as parsed (coordinates and text included). ``None``, an answer
    that did not parse, is a single key: whatever was wrong with it, nothing is executed.
    """
    return INVALID_ACTION_KEY if action is None else action.model_dump_json(exclude_none=True)


def _error(reason: ParseErrorReason, detail: str) -> ActionParseError:
    return ActionParseError(reason=reason, detail=detail[:500])


def _candidate_json(text: str) -> tuple[str | None, ActionParseError | None]:
    calls = _TOOL_CALL.findall(text)
    if len(calls) > 1:
        return None, _error(ParseErrorReason.MULTIPLE_CALLS, f"{len(calls)} tool calls; one action per step")
    if calls:
        return calls[0].strip(), None
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip(), None
    start, end = text.find("{"), text.rfind("}")
    if start == -1:
        return None, _error(ParseErrorReason.NO_TOOL_CALL, "no <tool_call> block and no JSON object")
    return text[start : end + 1] if end > start else text[start:], None


def _normalise(args: dict[str, Any]) -> dict[str, Any]:
    """Accept the harmless variations models produce: float coordinates, a single key string."""
    out = dict(args)
    for field in ("coordinate", "start_coordinate"):
        value = out.get(field)
        if isinstance(value, list | tuple) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            out[field] = [round(v) for v in value]
    if isinstance(out.get("keys"), str):
        out["keys"] = [k for k in re.split(r"[+ ]", out["keys"]) if k] or [out["keys"]]
    return out


def _validation_detail(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def parse_action(answer: str | bytes) -> Action | ActionParseError:
    """Parse a model answer into an ``Action``; any malformed answer gives an ``ActionParseError``."""
    if isinstance(answer, bytes | bytearray):
        try:
            answer = bytes(answer).decode("utf-8")
        except UnicodeDecodeError as exc:
            return _error(ParseErrorReason.NOT_UTF8, f"answer is not UTF-8 ({exc.reason} at byte {exc.start})")
    if not isinstance(answer, str):
        return _error(ParseErrorReason.NOT_AN_OBJECT, f"answer must be text, got {type(answer).__name__}")
    if len(answer) > MAX_ANSWER_CHARS:
        return _error(ParseErrorReason.TOO_LONG, f"answer has {len(answer)} characters (max {MAX_ANSWER_CHARS})")
    text = answer.strip()
    if not text:
        return _error(ParseErrorReason.EMPTY, "empty answer")
    candidate, err = _candidate_json(text)
    if err is not None:
        return err
    try:
        obj = json.loads(candidate)
    except (json.JSONDecodeError, RecursionError) as exc:
        return _error(ParseErrorReason.BAD_JSON, f"invalid JSON: {exc}")
    if not isinstance(obj, dict):
        return _error(ParseErrorReason.NOT_AN_OBJECT, f"expected a JSON object, got {type(obj).__name__}")
    if "name" in obj or "arguments" in obj:
        if obj.get("name") != TOOL_NAME:
            return _error(ParseErrorReason.WRONG_TOOL, f"unknown tool {str(obj.get('name'))[:60]!r}")
        args = obj.get("arguments")
        if isinstance(args, str):  # OpenAI-style arguments encoded as a JSON string
            try:
                args = json.loads(args)
            except (json.JSONDecodeError, RecursionError) as exc:
                return _error(ParseErrorReason.BAD_JSON, f"arguments are not valid JSON: {exc}")
    else:
        args = obj
    if not isinstance(args, dict):
        return _error(ParseErrorReason.BAD_ARGUMENTS, "arguments must be a JSON object")
    name = args.get("action")
    if not isinstance(name, str) or name not in ActionType._value2member_map_:
        return _error(ParseErrorReason.UNKNOWN_ACTION, f"unknown action {str(name)[:60]!r}")
    try:
        return Action.model_validate(_normalise(args))
    except ValidationError as exc:
        return _error(ParseErrorReason.BAD_ARGUMENTS, _validation_detail(exc))
    except (TypeError, ValueError) as exc:  # defensive: pydantic wraps most, not all
        return _error(ParseErrorReason.BAD_ARGUMENTS, str(exc))


def to_pixels(coordinate: tuple[int, int], viewport: Viewport) -> tuple[int, int]:
    """Map Qwen3-VL's 0..1000 relative coordinate to a pixel inside the viewport."""
    x, y = coordinate
    px = min(viewport.width - 1, round(x * viewport.width / COORD_MAX))
    py = min(viewport.height - 1, round(y * viewport.height / COORD_MAX))
    return px, py


def from_pixels(pixel: tuple[float, float], viewport: Viewport) -> tuple[int, int]:
    """Map a viewport pixel to the relative coordinate that ``to_pixels`` sends back to it (±1 px)."""
    px, py = pixel
    x = round(px * COORD_MAX / viewport.width)
    y = round(py * COORD_MAX / viewport.height)
    return max(0, min(COORD_MAX, x)), max(0, min(COORD_MAX, y))
