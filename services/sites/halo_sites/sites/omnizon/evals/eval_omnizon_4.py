"""local.omnizon-4: the cart holds exactly 3 of the skillet p12"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
report(final_cart(data, None) == {'p12': 3} and not new_orders(data))
