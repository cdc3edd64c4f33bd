"""local.gomail-8: exactly the three Deals Weekly emails moved to trash"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
report(trashed(data) == {"e04", "e06", "e09"})
