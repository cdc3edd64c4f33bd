"""Helpers shared by GoCalendar's eval scripts (importable because a script's folder is on sys.path).

They read differences.events.{added,updated,deleted}: lists of whole event records
({id, title, start, end, description, guests, location}; times "YYYY-MM-DDTHH:MM:00").
"""

import json
import re


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def _events(data, kind):
    items = ((data.get("differences") or {}).get("events") or {}).get(kind) or []
    return [e for e in items if isinstance(e, dict)]


def added(data):
    return _events(data, "added")


def updated(data):
    """id -> final record of each pre-existing event that changed."""
    return {e.get("id"): e for e in _events(data, "updated")}


def deleted_ids(data):
    return {e.get("id") for e in _events(data, "deleted")}


def text(value):
    return re.sub(r"\s+", " ", str(value or "")).strip().lower()


def guests(event):
    return {text(g) for g in (event.get("guests") or [])}


def at(event, start, end):
    """The event runs from start to end ("2024-07-18T07:00")."""
    return str(event.get("start", "")).startswith(start) and str(event.get("end", "")).startswith(end)


def answer(data):
    return text(data.get("answer"))


def report(ok):
    print("SUCCESS" if ok else "FAILURE")
