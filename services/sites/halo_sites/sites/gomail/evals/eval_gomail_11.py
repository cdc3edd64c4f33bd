"""local.gomail-11: an email to Marcus with subject Flight code containing K7Q2ZP was sent"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
report(any("marcus.chen@acme.com" in addresses(e["to"]) and "flight code" in text(e["subject"])
           and "k7q2zp" in text(e["content"]) for e in sent(data)))
