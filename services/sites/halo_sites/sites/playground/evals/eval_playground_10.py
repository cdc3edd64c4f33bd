"""local.playground-10: exactly Red and Blue were submitted"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and sorted(s.get("checked") or []) == ["Blue", "Red"])
