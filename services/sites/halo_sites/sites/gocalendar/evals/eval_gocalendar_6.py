"""local.gocalendar-6: ev06 now runs on 2024-07-19 15:00-16:00"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
e = updated(data).get("ev06") or {}
report(at(e, "2024-07-19T15:00", "2024-07-19T16:00") and text(e.get("title")) == "dentist appointment")
