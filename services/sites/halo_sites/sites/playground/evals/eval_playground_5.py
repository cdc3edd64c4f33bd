"""local.playground-5: the first click hit Delete among 6 shuffled buttons"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and s.get("button") == "Delete")
