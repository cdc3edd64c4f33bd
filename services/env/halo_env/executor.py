"""Carry out one computer-use action on a page.

``execute`` returns None when the page took the action, or a short message when it could not (an
unknown element id, a hidden element, a key that does not exist): that is the agent's error and
goes into the observation. Browser failures (a closed target, a crash) raise ``InfraError``;
a hung page never returns, and the caller's step timeout abandons it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from halo.actions import to_pixels
from halo.schemas import Action, ActionType, Viewport


class InfraError(Exception):
    """The browser, not the agent, failed (target closed, crash, protocol error)."""


_CLOSED_MARKERS = ("has been closed", "Target closed", "crashed", "Browser closed", "Connection closed")

# Qwen3-VL writes xdotool-style or casual key names; Playwright wants its own.
_KEY_ALIASES = {
    "ctrl": "Control",
    "control": "Control",
    "alt": "Alt",
    "option": "Alt",
    "shift": "Shift",
    "cmd": "Meta",
    "command": "Meta",
    "meta": "Meta",
    "super": "Meta",
    "win": "Meta",
    "windows": "Meta",
    "enter": "Enter",
    "return": "Enter",
    "kp_enter": "Enter",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": " ",
    "spacebar": " ",
    "backspace": "Backspace",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "ins": "Insert",
    "home": "Home",
    "end": "End",
    "pageup": "PageUp",
    "page_up": "PageUp",
    "pgup": "PageUp",
    "prior": "PageUp",
    "pagedown": "PageDown",
    "page_down": "PageDown",
    "pgdn": "PageDown",
    "next": "PageDown",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
    "capslock": "CapsLock",
    "caps_lock": "CapsLock",
    "numlock": "NumLock",
    "scrolllock": "ScrollLock",
    "pause": "Pause",
    "contextmenu": "ContextMenu",
    "menu": "ContextMenu",
    "printscreen": "PrintScreen",
    "print": "PrintScreen",
    "minus": "-",
    "plus": "+",
    "equal": "=",
    "comma": ",",
    "period": ".",
    "slash": "/",
    "backslash": "\\",
    "semicolon": ";",
    "apostrophe": "'",
    "grave": "`",
    "bracketleft": "[",
    "bracketright": "]",
}
_KEY_ALIASES.update({f"f{i}": f"F{i}" for i in range(1, 13)})
# Playwright's own names are accepted in any case.
_KEY_ALIASES.update(
    {
        name.lower(): name
        for name in (
            *(
                [
                    "Backquote",
                    "Minus",
                    "Equal",
                    "Backslash",
                    "Backspace",
                    "Tab",
                    "Delete",
                    "Escape",
                    "Enter",
                    "Home",
                    "End",
                    "Insert",
                    "PageUp",
                    "PageDown",
                ]
            ),
            *(
                [
                    "ArrowUp",
                    "ArrowDown",
                    "ArrowLeft",
                    "ArrowRight",
                    "Shift",
                    "Control",
                    "Alt",
                    "Meta",
                    "ControlOrMeta",
                    "CapsLock",
                ]
            ),
            *(f"Key{c}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
            *(f"Digit{d}" for d in range(10)),
        )
    }
)


def normalize_key(name: str) -> str | None:
    """Playwright's name for a key, or None when no such key exists."""
    if len(name) == 1:
        return name
    return _KEY_ALIASES.get(name.strip().lower().replace(" ", "").replace("-", "_"))


@dataclass
class Pointer:
    """Where the mouse is (pixels); forks put theirs in the same place so hover states match."""

    x: float | None = None
    y: float | None = None


def _infra_or_agent(exc: PlaywrightError) -> str:
    message = str(exc).split("\n", 1)[0]
    if any(marker in message for marker in _CLOSED_MARKERS):
        raise InfraError(message) from exc
    return message[:300]


async def _element_center(page: Page, element_id: str, viewport: Viewport) -> tuple[float, float] | str:
    locator = page.locator(f'[data-halo-id="{element_id}"]')
    if await locator.count() == 0:
        return f"unknown element id {element_id!r}: no element carries it on this page"
    target = locator.first
    try:
        await target.scroll_into_view_if_needed()
    except PlaywrightTimeoutError:
        return f"element {element_id!r} is not visible and cannot be scrolled into view"
    box = await target.bounding_box()
    if box is None or box["width"] <= 0 or box["height"] <= 0:
        return f"element {element_id!r} is not visible"
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    if not (0 <= x < viewport.width and 0 <= y < viewport.height):
        return f"element {element_id!r} is off-screen at ({x:.0f}, {y:.0f})"
    return x, y


async def _target(page: Page, action: Action, viewport: Viewport) -> tuple[float, float] | str:
    if action.element_id is not None:
        return await _element_center(page, action.element_id, viewport)
    assert action.coordinate is not None
    return to_pixels(action.coordinate, viewport)


async def execute(
    page: Page, action: Action, viewport: Viewport, pointer: Pointer, default_wait_s: float
) -> str | None:
    """Perform ``action``; None on success, else why the page could not take it."""
    try:
        return await _execute(page, action, viewport, pointer, default_wait_s)
    except PlaywrightTimeoutError as exc:
        return f"{action.action.value} timed out: {str(exc).splitlines()[0][:200]}"
    except PlaywrightError as exc:
        return _infra_or_agent(exc)


async def _execute(
    page: Page, action: Action, viewport: Viewport, pointer: Pointer, default_wait_s: float
) -> str | None:
    kind = action.action
    mouse = page.mouse

    if kind in (ActionType.TERMINATE, ActionType.ANSWER):
        return None
    if kind is ActionType.WAIT:
        await asyncio.sleep(default_wait_s if action.time is None else action.time)
        return None
    if kind is ActionType.KEY:
        assert action.keys is not None
        keys = [normalize_key(k) for k in action.keys]
        unknown = [raw for raw, key in zip(action.keys, keys, strict=True) if key is None]
        if unknown:
            return f"unknown key name {unknown[0]!r}"
        for key in keys:  # press in order, release in reverse: a chord like ctrl+shift+t
            await page.keyboard.down(key)
        for key in reversed(keys):
            await page.keyboard.up(key)
        return None
    if kind in (ActionType.SCROLL, ActionType.HSCROLL):
        assert action.pixels is not None
        if action.coordinate is not None:
            pointer.x, pointer.y = to_pixels(action.coordinate, viewport)
            await mouse.move(pointer.x, pointer.y)
        elif pointer.x is None:  # wheel events go to the element under the mouse: default to the centre
            pointer.x, pointer.y = viewport.width / 2, viewport.height / 2
            await mouse.move(pointer.x, pointer.y)
        dx, dy = (0, action.pixels) if kind is ActionType.SCROLL else (action.pixels, 0)
        await mouse.wheel(dx, dy)
        return None
    if kind is ActionType.TYPE:
        assert action.text is not None
        if action.element_id is not None:
            target = await _element_center(page, action.element_id, viewport)
            if isinstance(target, str):
                return target
            pointer.x, pointer.y = target
            await mouse.click(*target)
        await page.keyboard.type(action.text)
        return None
    if kind is ActionType.LEFT_CLICK_DRAG:
        assert action.coordinate is not None
        if action.start_coordinate is not None:
            start = to_pixels(action.start_coordinate, viewport)
        elif pointer.x is not None and pointer.y is not None:
            start = (pointer.x, pointer.y)
        else:
            return "left_click_drag needs 'start_coordinate': the mouse has no position yet"
        end = to_pixels(action.coordinate, viewport)
        await mouse.move(*start)
        await mouse.down()
        await mouse.move(*end, steps=8)
        await mouse.up()
        pointer.x, pointer.y = end
        return None

    target = await _target(page, action, viewport)
    if isinstance(target, str):
        return target
    x, y = target
    pointer.x, pointer.y = x, y
    if kind is ActionType.MOUSE_MOVE:
        await mouse.move(x, y)
    elif kind is ActionType.LEFT_CLICK:
        await mouse.click(x, y)
    elif kind is ActionType.RIGHT_CLICK:
        await mouse.click(x, y, button="right")
    elif kind is ActionType.MIDDLE_CLICK:
        await mouse.click(x, y, button="middle")
    elif kind is ActionType.DOUBLE_CLICK:
        await mouse.dblclick(x, y)
    elif kind is ActionType.TRIPLE_CLICK:
        await mouse.click(x, y, click_count=3)
    else:  # pragma: no cover - every ActionType is handled above
        return f"unsupported action {kind.value}"
    return None
