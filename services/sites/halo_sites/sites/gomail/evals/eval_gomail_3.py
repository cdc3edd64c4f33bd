"""local.gomail-3: e07 is unread"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
report(changed(data, "e07", "isRead") is False)
