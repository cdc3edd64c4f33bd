"""The HTML of the protocol pages every clone shares: /<site>/config and /<site>/finish.

Both are tiny documents that load the shared runtime and the site's data.js; all the work happens
in the browser, because the state they reset and report lives in the browser.
"""

from __future__ import annotations

import html
import json
from typing import Any


def _script_json(value: Any) -> str:
    # Safe inside <script>: no "</script>" or HTML comment openers can close the element early.
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _head(site: str, title: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<script src='/common/halo.js'></script>"
        f"<script src='/{html.escape(site)}/static/data.js'></script>"
        "</head>"
    )


def config_page(site: str, params: dict[str, Any], start: str) -> str:
    """Resets the site's storage to the task's initial state, then replaces itself with the app."""
    return (
        _head(site, f"{site} config")
        + "<body><p>Resetting…</p><script>"
        + f"HALO.reset({_script_json(params)});"
        + f"location.replace({_script_json(start)});"
        + "</script></body></html>"
    )


def finish_page(site: str) -> str:
    """Renders ``window.__HALO__.finish()`` as JSON in a <pre>, like REAL's /finish."""
    return (
        _head(site, f"{site} finish")
        + "<body><pre id='finish'></pre><script>"
        + "document.getElementById('finish').textContent = JSON.stringify(window.__HALO__.finish(), null, 2);"
        + "</script></body></html>"
    )


def index_page(sites: dict[str, int]) -> str:
    rows = "".join(
        f"<li><a href='/{html.escape(s)}/'>{html.escape(s)}</a> ({n} tasks)</li>" for s, n in sorted(sites.items())
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>HALO offline clones</title></head>"
        f"<body style='font-family: sans-serif'><h1>HALO offline clones</h1><ul>{rows}</ul>"
        "<p>Reset a site to a task with <code>/&lt;site&gt;/config?task_id=local.&lt;site&gt;-&lt;n&gt;&amp;seed=0</code>; "
        "read its state at <code>/&lt;site&gt;/finish</code>.</p></body></html>"
    )
