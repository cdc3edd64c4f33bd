"""local.gocalendar-7: Team lunch on 2024-07-19 12:00-13:00 with both guests was created"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
report(any(text(e["title"]) == "team lunch" and at(e, "2024-07-19T12:00", "2024-07-19T13:00")
           and {"jordan.kim@acme.com", "taylor.brooks@acme.com"} <= guests(e) for e in added(data)))
