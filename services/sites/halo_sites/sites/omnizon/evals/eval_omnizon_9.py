"""local.omnizon-9: one order of exactly one stock pot p11, shipped to Jamie Rivera in Portland, paid with the card ending 1111"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
orders = new_orders(data)
ok = len(orders) == 1 and order_items(orders[0]) == {'p11': 1}
ok = ok and address_is(orders[0], 'Jamie Rivera', '12 Oak Lane', 'Portland', 'OR', '97201')
ok = ok and paid_with(orders[0], '1111', 'Jamie Rivera', '08/27')
report(ok)
