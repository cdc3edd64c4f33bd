"""local.omnizon-5: the cart holds exactly one bottle p44 and one backpack p47"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
report(final_cart(data, None) == {'p44': 1, 'p47': 1} and not new_orders(data))
