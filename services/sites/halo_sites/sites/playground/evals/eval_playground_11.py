"""local.playground-11: exactly SMS updates was submitted"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and (s.get("checked") or []) == ["SMS updates"])
