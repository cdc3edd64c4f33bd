"""local.playground-4: the first click hit OK among 4 shuffled buttons"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and s.get("button") == "OK")
