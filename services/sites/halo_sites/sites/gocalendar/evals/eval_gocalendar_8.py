"""local.gocalendar-8: exactly the three Focus time events were deleted"""
import sys

from _cal import *  # noqa: F403

data = load(sys.argv[1])
report(deleted_ids(data) == {"ev10", "ev11", "ev12"})
