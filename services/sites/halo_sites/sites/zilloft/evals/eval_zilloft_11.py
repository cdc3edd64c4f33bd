"""local.zilloft-11: exactly sea3 ($1,117,000) and sea1 ($1,153,000) are saved"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
report(saved(data) == {"sea1", "sea3"})
