"""local.gomail-10: e03, e05 and e13 are starred and read"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
ids = {"e03": False, "e05": True, "e13": False}  # id -> initially read
report(all(final_flag(data, i, "starred", False) is True and final_flag(data, i, "isRead", r) is True for i, r in ids.items()))
