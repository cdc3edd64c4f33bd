"""local.playground-8: Green was submitted"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and s.get("selected") == "Green")
