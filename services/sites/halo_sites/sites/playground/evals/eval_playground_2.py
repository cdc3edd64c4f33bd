"""local.playground-2: the first click hit the Submit button (one of 4 seeded layouts)"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and s.get("button") == "Submit")
