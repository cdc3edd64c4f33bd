"""Helpers shared by Marrisuite's eval scripts (importable because a script's folder is on sys.path).

They read the /finish shape: differences.reservations {added, updated, deleted} (whole reservation
records {id, hotelId, roomId, checkIn, checkOut, rooms, guests, guestName, email, status, ...}) and
the top-level `answer` of retrieval tasks. Every task starts with the two upcoming stays res-1001
(Westmark Chicago Downtown) and res-1002 (Courtfield Miami Downtown Brickell).
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
    d = ((data.get("differences") or {}).get("reservations")) or {}
    return [r for r in (d.get(kind) or []) if isinstance(r, dict)]


def amount(answer):
    """'$149', '149.00', 'USD 149 per night' -> 149; None without a single amount."""
    found = re.findall(r"\d[\d,]*(?:\.\d+)?", str(answer or ""))
    if len(found) != 1:
        return None
    return float(found[0].replace(",", ""))


def report(ok):
    print("SUCCESS" if ok else "FAILURE")  # noqa: T201  (agisdk reads the verdict from stdout)
