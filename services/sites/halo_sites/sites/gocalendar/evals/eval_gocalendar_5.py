"""local.gocalendar-5: Call with Kevin on 2024-07-16 11:00-11:30 with the description was created"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
report(any(text(e["title"]) == "call with kevin" and at(e, "2024-07-16T11:00", "2024-07-16T11:30")
           and "contract renewal" in text(e.get("description")) for e in added(data)))
