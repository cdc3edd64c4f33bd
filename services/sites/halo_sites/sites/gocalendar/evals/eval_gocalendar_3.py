"""local.gocalendar-3: ev13 is now titled Pilates class, same time"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
e = updated(data).get("ev13") or {}
report(text(e.get("title")) == "pilates class" and at(e, "2024-07-20T08:00", "2024-07-20T09:00"))
