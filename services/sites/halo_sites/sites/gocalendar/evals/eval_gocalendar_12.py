"""local.gocalendar-12: Project sync (with Elena) now runs 2024-07-18 16:00-16:30 and no longer on Wednesday"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
moved = updated(data).get("ev15")
new = [e for e in added(data) if text(e["title"]) == "project sync"]
ok_moved = moved is not None and at(moved, "2024-07-18T16:00", "2024-07-18T16:30") and "elena.petrova@acme.com" in guests(moved)
ok_new = "ev15" in deleted_ids(data) and any(at(e, "2024-07-18T16:00", "2024-07-18T16:30") and "elena.petrova@acme.com" in guests(e) for e in new)
report(ok_moved or ok_new)
