"""Helpers shared by Staynb's local eval scripts (importable because a script's folder is on sys.path).

They read the /finish shape the clone writes: differences.wishlists (wishlists {id, name, stays[]},
stays as {id, title, location, rooms, ...}), differences.bookings (confirmed reservations {stayId,
startDate, endDate, guests {Adults, Children, Infants, Pets}, cardLast4, ...}) and the top-level
`answer` of a retrieval. Every task starts with no wishlists and no bookings.
"""

import json
import re


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def added(data, collection):
    """Whole records of a collection added during the episode."""
    d = ((data.get("differences") or {}).get(collection)) or {}
    return [r for r in (d.get("added") or []) if isinstance(r, dict)]


def text(value):
    return re.sub(r"\s+", " ", str(value or "")).strip().lower()


def day(value):
    return str(value or "")[:10]


def digits(value):
    return re.sub(r"\D", "", str(value or ""))


def report(ok):
    print("SUCCESS" if ok else "FAILURE")
