"""Helpers shared by NetworkIn's eval scripts (importable because a script's folder is on sys.path).

They read the /finish shape: initialfinaldiff.{added,deleted}.ui.followedCompanies (company id ->
true), differences.posts / differences.chats (whole post and conversation records) and the
top-level `answer` of retrieval tasks. Every task starts from the same member, Div Garg
(divgarg), following only AGI Inc.
"""

import json

ME = "divgarg"
COMPANIES = [
    "microsoft",
    "google",
    "apple",
    "amazon",
    "nvidia",
    "openai",
    "meta",
    "salesforce",
    "tesla",
    "stripe",
    "datadog",
]


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def _ui(data, kind):
    return (((data.get("initialfinaldiff") or {}).get(kind) or {}).get("ui")) or {}


def new_follows(data):
    """Company ids followed during the episode (and still followed)."""
    added = _ui(data, "added").get("followedCompanies") or {}
    return {k for k, v in added.items() if v is True}


def records(data, collection, kind):
    d = ((data.get("differences") or {}).get(collection)) or {}
    return [r for r in (d.get(kind) or []) if isinstance(r, dict)]


def shared_posts(chat):
    """Ids of the posts the member shared into a conversation record."""
    return [
        (m.get("postData") or {}).get("id")
        for m in chat.get("messages") or []
        if isinstance(m, dict) and m.get("type") == "post" and m.get("authorId") == ME
    ]


def report(ok):
    print("SUCCESS" if ok else "FAILURE")  # noqa: T201  (agisdk reads the verdict from stdout)
