"""Helpers shared by Zilloft's eval scripts (importable because a script's folder is on sys.path).

They read REAL's /finish shape: initialfinaldiff.updated.search.<field> (the search changed during
the episode), differences.saved (saved homes {id, address, price}) and
differences.contactRequests.added (messages sent to agents {homeId, name, phone, email, message}).
Every task starts with the default search, no saved homes and no messages.
"""

import json
import re

DEFAULT_SEARCH = {"location": "", "minPrice": None, "maxPrice": None, "beds": 0, "baths": 0, "homeTypes": [], "sort": "homes-for-you"}


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def _diff(data, collection):
    d = ((data.get("differences") or {}).get(collection)) or {}
    return {k: [r for r in (d.get(k) or []) if isinstance(r, dict)] for k in ("added", "updated", "deleted")}


def final_search(data):
    """The search (location, filters, sort) at the end of the episode."""
    changed = (((data.get("initialfinaldiff") or {}).get("updated") or {}).get("search")) or {}
    return {**DEFAULT_SEARCH, **changed}


def saved(data):
    """Ids of the homes saved at the end of the episode."""
    d = _diff(data, "saved")
    return {r.get("id") for r in d["added"]} - {r.get("id") for r in d["deleted"]}


def requests(data):
    """Messages sent to agents during the episode (whole records)."""
    return _diff(data, "contactRequests")["added"]


def text(value):
    return re.sub(r"\s+", " ", str(value or "")).strip().lower()


def digits(value):
    return re.sub(r"\D", "", str(value or ""))


def contacted(req, home_id, name, phone, email):
    return (req.get("homeId") == home_id and text(req.get("name")) == text(name) and digits(req.get("phone")) == digits(phone)
            and text(req.get("email")) == text(email))


def progress(data, name):
    return bool((data.get("progress") or {}).get(name))


def answer(data):
    return re.sub(r"\s+", " ", str(data.get("answer") or "")).strip()


def amount(value):
    """A dollar amount in a text ('$1,002,000', '1002000') as an int, or None."""
    m = re.search(r"\d[\d,]*", str(value or ""))
    return int(m.group(0).replace(",", "")) if m else None


def report(ok):
    print("SUCCESS" if ok else "FAILURE")
