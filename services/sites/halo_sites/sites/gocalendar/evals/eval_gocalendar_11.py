"""local.gocalendar-11: Sprint demo on 2024-07-22 15:00-16:00 with the description and Marcus as guest was created"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
report(any(text(e["title"]) == "sprint demo" and at(e, "2024-07-22T15:00", "2024-07-22T16:00") and "onboarding" in text(e.get("description"))
           and "marcus.chen@acme.com" in guests(e) for e in added(data)))
