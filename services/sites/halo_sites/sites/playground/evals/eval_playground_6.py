"""local.playground-6: "banana" was submitted"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and norm(s["fields"].get("word")) == "banana")
