"""Helpers shared by OpenDining's local eval scripts (importable because a script's folder is on sys.path).

They read REAL's /finish shape through the clone's `differences.reservations` (whole records of
booking.bookingDetails: {id, confirmationNumber, restaurant {id, name, ...}, date, time, guests,
optionals {occasion, specialRequest}, user, status}). The local tasks start with two confirmed
reservations: Golden Lantern (OD-40718, 2024-07-20 7:00 PM) and Olive & Vine (OD-52963).
"""

import json
import re


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def reservations(data, kind):
    """Reservation records added, updated or deleted during the episode."""
    d = ((data.get("differences") or {}).get("reservations")) or {}
    return [r for r in (d.get(kind) or []) if isinstance(r, dict)]


def restaurant_name(record):
    return str((record.get("restaurant") or {}).get("name") or "")


def day(record):
    return str(record.get("date") or "")[:10]


def occasion(record):
    return str((record.get("optionals") or {}).get("occasion") or "").strip().lower()


def progress(data, name):
    return bool((data.get("progress") or {}).get(name))


def answer(data):
    return re.sub(r"\s+", " ", str(data.get("answer") or "")).strip()


def report(ok):
    print("SUCCESS" if ok else "FAILURE")  # noqa: T201 (the eval contract is stdout)
