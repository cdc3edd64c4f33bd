"""local.gocalendar-1: exactly ev06 (Dentist appointment) was deleted"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
report(deleted_ids(data) == {"ev06"} and not added(data))
