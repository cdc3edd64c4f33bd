"""local.omnizon-3: the cart holds exactly the cheapest yoga mat (p42, ZenCore, $19.99)"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
report(final_cart(data, None) == {'p42': 1} and not new_orders(data))
