"""local.gocalendar-4: the answer is 10:00 (10am)"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
a = answer(data).replace(" ", "").replace(".", "")
report(a in ("10:00", "10am", "10:00am", "10"))
