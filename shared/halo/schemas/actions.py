"""The agent's action vocabulary: Qwen3-VL's ``computer_use`` tool plus element-id addressing.

Coordinates are kept exactly as the model writes them: relative, 0..1000 on each axis (Qwen3-VL's
convention). Only the environment maps them to viewport pixels (``halo.actions.to_pixels``), so a
transition records what the policy said, not what a particular screen size made of it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from halo.schemas.base import WireFloat, WireInt, WireText

COORD_MAX = 1000
MAX_TEXT_CHARS = 2000  # longer `type`/`answer` text is a parse error, not 100 KB typed into a page


class ActionType(StrEnum):
    KEY = "key"
    TYPE = "type"
    MOUSE_MOVE = "mouse_move"
    LEFT_CLICK = "left_click"
    LEFT_CLICK_DRAG = "left_click_drag"
    RIGHT_CLICK = "right_click"
    MIDDLE_CLICK = "middle_click"
    DOUBLE_CLICK = "double_click"
    TRIPLE_CLICK = "triple_click"
    SCROLL = "scroll"
    HSCROLL = "hscroll"
    WAIT = "wait"
    TERMINATE = "terminate"
    ANSWER = "answer"


POINTER_ACTIONS = frozenset(
    {
        ActionType.MOUSE_MOVE,
        ActionType.LEFT_CLICK,
        ActionType.LEFT_CLICK_DRAG,
        ActionType.RIGHT_CLICK,
        ActionType.MIDDLE_CLICK,
        ActionType.DOUBLE_CLICK,
        ActionType.TRIPLE_CLICK,
    }
)
# Actions that may address an accessibility-tree element instead of a coordinate.
ELEMENT_ACTIONS = POINTER_ACTIONS - {ActionType.LEFT_CLICK_DRAG} | {ActionType.TYPE}

Coord = Annotated[int, Field(ge=0, le=COORD_MAX, strict=True)]  # strict: true/false are not coordinates


class Action(BaseModel):
    """One computer-use action. Which fields are required depends on ``action``.

    ``coordinate`` is [x, y] in 0..1000 relative units; ``element_id`` is the ``bid`` of an
    accessibility-tree node (the second addressing mode): exactly one of them for pointer actions.
    ``left_click_drag`` drags from the current mouse position (or ``start_coordinate``) to
    ``coordinate``. ``scroll``/``hscroll`` take ``pixels`` (positive = down/right).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: ActionType
    coordinate: tuple[Coord, Coord] | None = None
    start_coordinate: tuple[Coord, Coord] | None = None
    element_id: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_\-.:]+$")] | None = None
    text: Annotated[WireText, Field(max_length=MAX_TEXT_CHARS)] | None = None
    keys: (
        Annotated[list[Annotated[WireText, Field(min_length=1, max_length=32)]], Field(min_length=1, max_length=6)]
        | None
    ) = None
    pixels: Annotated[WireInt, Field(ge=-10_000, le=10_000)] | None = None
    time: Annotated[WireFloat, Field(ge=0, le=30)] | None = None
    status: Literal["success", "failure"] | None = None

    @model_validator(mode="after")
    def _required_arguments(self) -> Action:
        a = self.action
        if a in POINTER_ACTIONS:
            has_target = (self.coordinate is not None) + (self.element_id is not None)
            if a is ActionType.LEFT_CLICK_DRAG:
                if self.coordinate is None:
                    raise ValueError("left_click_drag needs 'coordinate' (the drop point)")
            elif has_target != 1:
                raise ValueError(f"{a.value} needs exactly one of 'coordinate' or 'element_id'")
        elif a is ActionType.TYPE:
            if self.text is None:
                raise ValueError("type needs 'text'")
        elif a is ActionType.KEY:
            if not self.keys:
                raise ValueError("key needs 'keys', e.g. ['ctrl', 'a']")
        elif a in (ActionType.SCROLL, ActionType.HSCROLL):
            if self.pixels is None:
                raise ValueError(f"{a.value} needs 'pixels'")
        elif a is ActionType.TERMINATE:
            if self.status is None:
                raise ValueError("terminate needs 'status' ('success' or 'failure')")
        elif a is ActionType.ANSWER and self.text is None:
            raise ValueError("answer needs 'text'")
        if self.element_id is not None and a not in ELEMENT_ACTIONS:
            raise ValueError(f"{a.value} cannot address an element_id")
        return self

    def arguments(self) -> dict:
        """The ``computer_use`` arguments object, as the model would write it."""
        return self.model_dump(mode="json", exclude_none=True)

    def short(self) -> str:
        """A one-line rendering for prompts' action history and logs."""
        args = {k: v for k, v in self.arguments().items() if k != "action"}
        inner = ", ".join(f"{k}={v!r}" for k, v in args.items())
        return f"{self.action.value}({inner})"


class ParseErrorReason(StrEnum):
    EMPTY = "empty"
    NOT_UTF8 = "not_utf8"
    TOO_LONG = "too_long"
    NO_TOOL_CALL = "no_tool_call"
    BAD_JSON = "bad_json"
    NOT_AN_OBJECT = "not_an_object"
    WRONG_TOOL = "wrong_tool"
    UNKNOWN_ACTION = "unknown_action"
    BAD_ARGUMENTS = "bad_arguments"
    MULTIPLE_CALLS = "multiple_calls"


class ActionParseError(BaseModel):
    """Why a model answer is not an action. Data, never an exception."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reason: ParseErrorReason
    detail: Annotated[str, Field(max_length=500)]
