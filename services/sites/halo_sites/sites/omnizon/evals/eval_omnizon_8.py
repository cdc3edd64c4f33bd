"""local.omnizon-8: the cart ends as exactly {mouse p08: 1, mugs p15: 1}"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
report(final_cart(data, {'p08': 1, 'p15': 2, 'p33': 1}) == {'p08': 1, 'p15': 1} and not new_orders(data))
