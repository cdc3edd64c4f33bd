"""local.gomail-7: an email to Jordan, cc Taylor, subject Project kickoff, mentioning Monday was sent"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
report(any("jordan.kim@acme.com" in addresses(e["to"]) and "taylor.brooks@acme.com" in addresses(e.get("cc"))
           and text(e["subject"]) == "project kickoff" and "monday" in text(e["content"]) for e in sent(data)))
