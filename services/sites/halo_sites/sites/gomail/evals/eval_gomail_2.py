"""local.gomail-2: exactly e06 moved to trash"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
report(trashed(data) == {"e06"})
