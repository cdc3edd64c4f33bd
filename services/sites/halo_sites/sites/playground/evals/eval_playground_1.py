"""local.playground-1: the first click hit the Submit button"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and s.get("button") == "Submit")
