"""Helpers shared by Topwork's local eval scripts (importable because a script's folder is on sys.path).

They read the /finish shape: initialfinaldiff (REAL's nested diff; saved talent is the whole
`saved.savedFreelancerIds` list under `updated` once it changed) and differences.offers.added
(offers sent {id, freelancerId, contractTitle, hourlyRate, startDate, status, ...}). Every task
starts with nothing saved and no offers.
"""

import json
import re


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def saved_ids(data):
    """The saved freelancer ids at the end of the episode (none saved at the start)."""
    diff = data.get("initialfinaldiff") or {}
    for section in ("updated", "added"):
        ids = ((diff.get(section) or {}).get("saved") or {}).get("savedFreelancerIds")
        if isinstance(ids, list):
            return {i for i in ids if isinstance(i, str)}
    return set()


def offers_added(data):
    added = (((data.get("differences") or {}).get("offers")) or {}).get("added") or []
    return [o for o in added if isinstance(o, dict)]


def norm(text):
    """Lower case, punctuation dropped, spaces collapsed: answers are compared on words."""
    return " ".join(re.sub(r"[^a-z0-9$]+", " ", str(text or "").lower()).split())


def report(ok):
    print("SUCCESS" if ok else "FAILURE")  # noqa: T201 (the eval contract is stdout)
