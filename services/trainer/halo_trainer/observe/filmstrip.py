"""Screenshots with the action drawn on them: the trackers' episode images and the viewer's frames.

Coordinates are the model's relative 0..1000 units, mapped onto the image itself, so the marker
lands where the policy pointed whatever the screenshot's pixel size.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from PIL import Image, ImageDraw

from halo.schemas.actions import COORD_MAX

MARKER = (230, 30, 60)
FRAME_WIDTH = 320  # a filmstrip frame's width in the trackers' images, pixels
MAX_FRAMES = 8  # frames in one tracker image (an episode's first steps)


def to_image_pixels(coordinate: Sequence[int], size: tuple[int, int]) -> tuple[int, int]:
    """A 0..1000 relative coordinate as a pixel of an image of ``size`` (width, height)."""
    w, h = size
    return min(w - 1, round(coordinate[0] * w / COORD_MAX)), min(h - 1, round(coordinate[1] * h / COORD_MAX))


def draw_action(png: bytes, action: dict[str, Any] | None, label: str = "") -> Image.Image:
    """The screenshot with ``action`` (an ``Action`` as JSON) drawn: a ring at the point, a line
    for a drag, the typed text or the keys in a caption; ``label`` (a parse error, say) when none."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    draw = ImageDraw.Draw(image)
    r = max(6, image.width // 80)
    caption = label
    if action:
        if action.get("coordinate"):
            x, y = to_image_pixels(action["coordinate"], image.size)
            if action.get("start_coordinate"):
                sx, sy = to_image_pixels(action["start_coordinate"], image.size)
                draw.line([(sx, sy), (x, y)], fill=MARKER, width=max(2, r // 3))
                draw.ellipse([sx - r // 2, sy - r // 2, sx + r // 2, sy + r // 2], outline=MARKER, width=2)
            draw.ellipse([x - r, y - r, x + r, y + r], outline=MARKER, width=max(2, r // 3))
        caption = action["action"]
        if action.get("text"):
            caption += f": {action['text'][:80]}"
        if action.get("keys"):
            caption += ": " + "+".join(action["keys"])
        if action.get("element_id"):
            caption += f" [{action['element_id']}]"
    if caption:
        box = draw.textbbox((0, 0), caption)
        draw.rectangle([0, 0, box[2] + 8, box[3] + 6], fill=(0, 0, 0))
        draw.text((4, 3), caption, fill=(255, 255, 255))
    return image


def strip(frames: Sequence[Image.Image], width: int = FRAME_WIDTH) -> Image.Image:
    """Frames side by side, each scaled to ``width`` pixels."""
    scaled = [f.resize((width, max(1, round(f.height * width / f.width)))) for f in frames]
    out = Image.new("RGB", (width * len(scaled), max(f.height for f in scaled)), (255, 255, 255))
    for i, frame in enumerate(scaled):
        out.paste(frame, (i * width, 0))
    return out
