"""local.zilloft-2: exactly the home aus4 (3924 Pine St, Austin) is saved"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
report(saved(data) == {"aus4"})
