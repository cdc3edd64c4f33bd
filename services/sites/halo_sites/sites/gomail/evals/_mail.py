"""Helpers shared by GoMail's eval scripts (importable because a script's folder is on sys.path).

They read REAL's /finish shape: initialfinaldiff.{added,updated,deleted}.email.emails.<id>.<field>
and differences.emails.{added,updated,deleted} (lists of whole records).
"""

import json
import re


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def changed(data, email_id, field):
    """The new value of one field of one email, or None when it did not change."""
    emails = (((data.get("initialfinaldiff") or {}).get("updated") or {}).get("email") or {}).get("emails") or {}
    return (emails.get(email_id) or {}).get(field)


def final_flag(data, email_id, field, initial):
    value = changed(data, email_id, field)
    return initial if value is None else value


def trashed(data):
    """Ids of emails moved to the trash during the episode."""
    emails = (((data.get("initialfinaldiff") or {}).get("updated") or {}).get("email") or {}).get("emails") or {}
    return {eid for eid, ch in emails.items() if isinstance(ch, dict) and ch.get("trash") is True}


def sent(data):
    """Emails sent during the episode (whole records)."""
    added = ((data.get("differences") or {}).get("emails") or {}).get("added") or []
    return [e for e in added if isinstance(e, dict) and e.get("sent") is True]


def text(value):
    return re.sub(r"\s+", " ", str(value or "")).strip().lower()


def addresses(value):
    return [text(a) for a in (value or [])]


def answer(data):
    return text(data.get("answer"))


def report(ok):
    print("SUCCESS" if ok else "FAILURE")
