"""local.gomail-12: a reply to Elena asking about the VPN was sent and exactly e10 moved to trash"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
replied = any(addresses(e["to"]) == ["elena.petrova@acme.com"] and "vpn" in text(e["content"]) for e in sent(data))
report(replied and trashed(data) == {"e10"})
