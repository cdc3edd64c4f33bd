"""local.gomail-1: e01 (Q3 budget review) is starred"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
report(changed(data, "e01", "starred") is True)
