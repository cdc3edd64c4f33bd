"""local.gomail-5: an email to sam.lee@acme.com, subject Lunch on Friday, asking about lunch on Friday, was sent"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
report(any(addresses(e["to"]) == ["sam.lee@acme.com"] and text(e["subject"]) == "lunch on friday"
           and "lunch" in text(e["content"]) and "friday" in text(e["content"]) for e in sent(data)))
