"""Helpers shared by UDriver's local eval scripts (importable because a script's folder is on sys.path).

They read the /finish shape of the local dataset: differences.trips.added (rides taken during the
episode, status "completed"), differences.scheduled.added (rides booked for later, status
"scheduled") and the top-level `answer` of a retrieval. Each record is a whole trip:
{id, pickup {id, name, ...}, destination {id, name, ...}, car {type, finalPrice, ...},
paymentMethod {id, type, displayName}, date "M/D/YYYY", time "h:mm AM", status}.
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
    """Records added to a `differences` collection during the episode."""
    d = ((data.get("differences") or {}).get(collection)) or {}
    return [r for r in (d.get("added") or []) if isinstance(r, dict)]


def route_is(trip, pickup_id, destination_id):
    return (trip.get("pickup") or {}).get("id") == pickup_id and (trip.get("destination") or {}).get(
        "id"
    ) == destination_id


def car_type(trip):
    return (trip.get("car") or {}).get("type")


def paid_with(trip):
    return (trip.get("paymentMethod") or {}).get("type")


def dollars(value):
    """A dollar amount in a text ('$16.60', '16.6 dollars') as a float, or None."""
    m = re.search(r"\d+(?:\.\d+)?", str(value or "").replace(",", ""))
    return float(m.group(0)) if m else None


def report(ok):
    print("SUCCESS" if ok else "FAILURE")  # noqa: T201 - agisdk reads the verdict from stdout
