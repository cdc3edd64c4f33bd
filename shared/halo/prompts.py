"""The one place that builds the policy's chat messages, for serving and for training alike.

vLLM (through ``halo.policy_client``) and the learner (through ``halo_model.inputs``) both call
``build_messages`` and render the result with the model's own chat template, so the token ids the
learner rebuilds are the ones vLLM sampled from; ``halo_model.inputs.build_batch`` asserts it.

Layout (the Qwen3-VL computer-use cookbook's, written out here instead of passing ``tools=`` so
no server flag or template branch can change it):

* system: a one-line role, then the ``computer_use`` tool for the viewport in Qwen's
  ``# Tools`` / ``<tools>`` block, exactly what Qwen3-VL's template renders for ``tools=[...]``
  (``describe_tools=False`` keeps the role line alone: the run knob of that name, for a model that
  answers under the grammar and cannot read the ~700-token description);
* user: the goal, the last ``history_limit`` actions (oldest first, with a count of older ones
  left out), optionally the previous screenshots, then the current screenshot.

Images are placeholders here: ``image_urls`` (data URLs for vLLM's OpenAI API) or, when omitted,
``{"type": "image"}`` parts for a Hugging Face processor. Both render to the same text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from halo.actions import tool_definition
from halo.schemas.actions import Action
from halo.schemas.env import Viewport

SYSTEM_ROLE = "You are a helpful assistant that operates a web browser to complete the user's task."
DEFAULT_HISTORY_LIMIT = 8  # previous actions shown; older ones are counted, not listed

_TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call>"
)


def system_prompt(viewport: Viewport | None = None, role: str = SYSTEM_ROLE, describe_tools: bool = True) -> str:
    """The system turn: role line plus the ``computer_use`` tool, as Qwen3-VL's template renders tools."""
    if not describe_tools:
        return role
    tool = json.dumps(tool_definition(viewport or Viewport()), ensure_ascii=False)
    return f"{role}\n\n{_TOOLS_HEADER}\n{tool}{_TOOLS_FOOTER}"


def history_lines(history: Sequence[str | Action], limit: int = DEFAULT_HISTORY_LIMIT) -> list[str]:
    """The bounded action history as numbered lines (numbers are absolute step indices)."""
    rendered = [h.short() if isinstance(h, Action) else str(h) for h in history]
    start = max(0, len(rendered) - max(0, limit))
    lines = [f"({start} earlier actions omitted)"] if start else []
    lines += [f"{i + 1}. {text}" for i, text in enumerate(rendered[start:], start=start)]
    return lines


def user_text(goal: str, history: Sequence[str | Action], history_limit: int = DEFAULT_HISTORY_LIMIT) -> str:
    lines = history_lines(history, history_limit)
    past = "\n".join(lines) if lines else "(none yet)"
    return f"Task goal: {goal}\n\nPrevious actions (oldest first):\n{past}\n\nCurrent screenshot:"


def prompt_settings(sampling: Any) -> dict[str, Any]:
    """The fields of a run's ``SamplingParams`` that shape the prompt, as keywords: for
    ``openai_messages`` (the policy client's request to vLLM) and for ``halo_model.inputs``'
    ``prompt_inputs`` and ``build_batch`` (every rebuild of a sampled prompt: training batches, MCTS
    pairs, the run-start check), so the two sides cannot read different fields."""
    return {
        "viewport": sampling.viewport,
        "history_limit": sampling.history_limit,
        "describe_tools": sampling.describe_tools,
    }


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def build_messages(
    goal: str,
    history: Sequence[str | Action] = (),
    *,
    viewport: Viewport | None = None,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
    describe_tools: bool = True,
    n_previous_images: int = 0,
    image_urls: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Chat messages for one decision.

    ``n_previous_images`` earlier screenshots (oldest first) come before the current one; the
    caller supplies ``n_previous_images + 1`` images in that order, as ``image_urls`` for vLLM or
    to the processor for Hugging Face.
    """
    n_images = n_previous_images + 1
    if image_urls is not None and len(image_urls) != n_images:
        raise ValueError(f"expected {n_images} image urls, got {len(image_urls)}")

    def image(i: int) -> dict[str, Any]:
        if image_urls is None:
            return {"type": "image"}
        return {"type": "image_url", "image_url": {"url": image_urls[i]}}

    content: list[dict[str, Any]] = [{"type": "text", "text": user_text(goal, history, history_limit)}]
    if n_previous_images:
        content[0]["text"] = content[0]["text"].removesuffix("Current screenshot:") + "Previous screenshots:"
        content += [image(i) for i in range(n_previous_images)]
        content.append({"type": "text", "text": "\nCurrent screenshot:"})
    content.append(image(n_images - 1))
    return [
        {
            "role": "system",
            "content": [{"type": "text", "text": system_prompt(viewport, describe_tools=describe_tools)}],
        },
        {"role": "user", "content": content},
    ]


def openai_messages(
    goal: str,
    history: Sequence[str | Action],
    screenshots: Sequence[bytes],
    *,
    viewport: Viewport | None = None,
    history_limit: int = DEFAULT_HISTORY_LIMIT,
    describe_tools: bool = True,
) -> list[dict[str, Any]]:
    """``build_messages`` with PNG screenshots inlined as data URLs (oldest first, current last)."""
    if not screenshots:
        raise ValueError("at least the current screenshot is needed")
    return build_messages(
        goal,
        history,
        viewport=viewport,
        history_limit=history_limit,
        describe_tools=describe_tools,
        n_previous_images=len(screenshots) - 1,
        image_urls=[png_data_url(s) for s in screenshots],
    )


_KEY_NAMES = "(Enter|Tab|Escape|Backspace|ArrowDown|ArrowUp)"
_NUM_0_1000 = "(0|[1-9][0-9]{0,2}|1000)"


def tool_call_regex() -> str:
    """Regular expression of one answer in Qwen3-VL's exact format, for vLLM's ``structured_outputs``.

    The same action subset as ``halo.actions.tool_call_json_schema`` but with the wrapper and the
    separators fixed (``<tool_call>\\n{"name": ...}\\n</tool_call>``, ``json.dumps`` spacing), so a
    random-weight model cannot fill its budget with the whitespace a JSON grammar allows, and its
    answers look like the 8B's.
    """
    coord = rf"\[{_NUM_0_1000}, {_NUM_0_1000}\]"
    variants = [
        rf'"action": "(left_click|double_click|right_click|mouse_move|triple_click)", "coordinate": {coord}',
        r'"action": "type", "text": "[A-Za-z0-9 .,:@_\'-]{1,40}"',
        rf'"action": "key", "keys": \["{_KEY_NAMES}"(, "{_KEY_NAMES}"){{0,2}}\]',
        rf'"action": "scroll", "pixels": -?{_NUM_0_1000}',
        r'"action": "terminate", "status": "(success|failure)"',
    ]
    return r'<tool_call>\n\{"name": "computer_use", "arguments": \{(' + "|".join(variants) + r")\}\}\n</tool_call>"
