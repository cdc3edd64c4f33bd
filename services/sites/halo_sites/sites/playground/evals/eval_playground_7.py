"""local.playground-7: Ada Lovelace was submitted"""
import sys

from _pg import norm, report, submission

s = submission(sys.argv[1])
report(s is not None and norm(s["fields"].get("first")) == "ada" and norm(s["fields"].get("last")) == "lovelace")
