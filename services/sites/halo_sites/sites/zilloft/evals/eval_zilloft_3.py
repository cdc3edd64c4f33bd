"""local.zilloft-3: the answer is $1,002,000"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
report(amount(answer(data)) == 1002000)
