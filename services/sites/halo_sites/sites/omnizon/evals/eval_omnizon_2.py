"""local.omnizon-2: the answer is the knife's price, $45.99"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
report(price_in(answer(data)) == 45.99)
