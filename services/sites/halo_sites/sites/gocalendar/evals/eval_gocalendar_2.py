"""local.gocalendar-2: a Gym event on 2024-07-18 07:00-08:00 was created"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
report(any(text(e["title"]) == "gym" and at(e, "2024-07-18T07:00", "2024-07-18T08:00") for e in added(data)))
