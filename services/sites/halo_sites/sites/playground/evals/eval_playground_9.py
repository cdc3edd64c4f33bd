"""local.playground-9: Paris was submitted"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and s.get("selected") == "Paris")
