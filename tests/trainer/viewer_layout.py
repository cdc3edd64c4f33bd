"""What the viewer's Chromium tests check of a page's layout: nothing wider than the window, and no
element sticking out of the box that holds it (a table's last column cut off, a legend running past
its chart, action labels running into each other).

A box that clips or scrolls on purpose (a plain episode's filmstrip scrolls sideways, uPlot clips its
canvas layers) is judged as a whole against its own parent; what is inside it is not. Fixed overlays
(the enlarged screenshot) are over the page, not in it.
"""

from __future__ import annotations

OVERFLOW_JS = """
() => {
  const out = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth) out.push(`the page is ${doc.scrollWidth} px wide in a ${doc.clientWidth} px window`);
  const insideClip = (e) => {
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible") return true;
    }
    return false;
  };
  const name = (e) => {
    const classes = typeof e.className === "string" && e.className.trim() ? "." + e.className.trim().split(/\\s+/).join(".") : "";
    return `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}${classes}`;
  };
  for (const e of document.querySelectorAll("body *")) {
    const style = getComputedStyle(e);
    if (!e.parentElement || style.display === "none" || style.visibility === "hidden" || style.position === "fixed") continue;
    if (insideClip(e)) continue;
    const r = e.getBoundingClientRect();
    if (!r.width && !r.height) continue;
    const p = e.parentElement.getBoundingClientRect();
    if (r.right > p.right + 1 || r.left < p.left - 1) {
      out.push(`${name(e)} (x ${Math.round(r.left)}-${Math.round(r.right)}) outside ${name(e.parentElement)} (x ${Math.round(p.left)}-${Math.round(p.right)})`);
    }
  }
  return out;
}
"""


async def layout_problems(page) -> list[str]:
    """Every element of the open page that overflows its container, and the page if it is too wide."""
    return await page.evaluate(OVERFLOW_JS)
