"""local.gomail-9: the answer names July 20 (2024-07-20)"""
import sys

from _mail import *  # noqa: F403

data = load(sys.argv[1])
a = answer(data)
report(any(s in a for s in ("2024-07-20", "july 20", "jul 20", "7/20", "20 july")))
