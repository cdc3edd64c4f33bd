"""local.gomail-6: a reply to Priya about the Q3 budget review saying it looks good was sent"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
report(any(addresses(e["to"]) == ["priya.raman@acme.com"] and "q3 budget review" in text(e["subject"])
           and "looks good" in text(e["content"]) for e in sent(data)))
