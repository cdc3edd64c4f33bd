"""Base class of every message that crosses REST or Redis."""

from __future__ import annotations

import math
import numbers
import secrets
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic_core import PydanticCustomError

SCHEMA_VERSION = 1


def new_id(prefix: str) -> str:
    """An unguessable id with a readable prefix, e.g. ``sess-3f9c...`` (128 bits of randomness)."""
    return f"{prefix}-{secrets.token_hex(16)}"


class Message(BaseModel):
    """Every wire message carries ``schema_version`` and rejects unknown fields.

    ``extra="forbid"`` turns a misspelled field in a REST body into a 422 naming the field, rather
    than a silently ignored option.
    """

    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True)

    schema_version: Literal[1] = SCHEMA_VERSION


# -- values a client sends -------------------------------------------------------------------------
# Pydantic's lax mode reads JSON ``true`` as 1 and ``"5"`` as 5, and Python's json (which FastAPI
# parses bodies with) reads ``NaN``, ``Infinity`` and ``1e400`` as floats: a request of
# ``{"episodes": true}`` became a one-episode run and a site state holding NaN was scored. These
# types are what request fields use instead of bare ``int``/``float``/``bool``/``str``. They refuse
# what JSON cannot mean as a number, but keep accepting the numeric types our own code passes
# (numpy scalars, a float with no fractional part for an int), which ``strict=True`` would refuse.

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _real_number(value: Any) -> Any:
    # bool is an int subclass, and numpy's bool_ is no numbers.Real: both are refused here.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PydanticCustomError(
            "number_type", "Input should be a JSON number, not {kind}", {"kind": _json_kind(value)}
        )
    return value


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else type(value).__name__


def _no_nul(value: str) -> str:
    # A NUL ends the string in C code underneath (the browser's input, a tokenizer, a log line),
    # so what is typed or prompted would not be what was sent.
    if "\x00" in value:
        raise PydanticCustomError("nul_character", "Input should not contain NUL (\\u0000) characters")
    return value


def _finite_json(value: dict[str, Any]) -> dict[str, Any]:
    """Every number anywhere inside is finite and fits 64 bits, else an error naming its path.

    Iterative, not recursive: the body was already nested as deep as the JSON parser allows.
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        bad = None
        if isinstance(item, float):
            bad = None if math.isfinite(item) else "NaN" if math.isnan(item) else f"{'-' if item < 0 else ''}Infinity"
        elif isinstance(item, int) and not isinstance(item, bool):
            bad = None if INT64_MIN <= item <= INT64_MAX else "an integer beyond 64 bits"
        elif isinstance(item, dict):
            stack.extend((f"{path}.{k}" if path else str(k), v) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}.{i}" if path else str(i), v) for i, v in enumerate(item))
        if bad is not None:
            raise PydanticCustomError(
                "finite_number",
                "{where}: {bad} is refused (only finite numbers, integers within 64 bits)",
                {"where": path or "value", "bad": bad},
            )
    return value


WireInt = Annotated[int, BeforeValidator(_real_number), Field(ge=INT64_MIN, le=INT64_MAX)]
WireFloat = Annotated[float, BeforeValidator(_real_number), Field(allow_inf_nan=False)]
WireBool = Annotated[bool, Strict()]  # JSON true/false only: not 1, 0, "yes" or "off"
WireText = Annotated[str, AfterValidator(_no_nul)]  # text that reaches a browser or a prompt
# A free-form JSON object (a site's state): any shape, but only finite numbers inside.
WireJson = Annotated[dict[str, Any], AfterValidator(_finite_json)]
