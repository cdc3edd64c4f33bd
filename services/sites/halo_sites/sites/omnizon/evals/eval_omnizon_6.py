"""local.omnizon-6: the answer is Dragons of the North Wind ($9.99)"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
title = text(answer(data)).replace("(paperback)", "").strip()
report(title == "dragons of the north wind")
