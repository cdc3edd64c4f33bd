"""Helpers shared by the playground's eval scripts (importable because a script's folder is on sys.path)."""

import json


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def submission(path):
    """What the agent submitted (the form is one-shot), or None when nothing was submitted."""
    try:
        diff = load(path).get("initialfinaldiff") or {}
    except Exception:
        return None
    for branch in ("updated", "added"):
        value = (diff.get(branch) or {}).get("submission")
        if isinstance(value, dict):
            return value
    return None


def norm(text):
    return str(text or "").strip().lower()


def report(ok):
    print("SUCCESS" if ok else "FAILURE")
