"""local.omnizon-1: the cart holds exactly one Orb Mini smart speaker (p02)"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
report(final_cart(data, None) == {'p02': 1} and not new_orders(data))
