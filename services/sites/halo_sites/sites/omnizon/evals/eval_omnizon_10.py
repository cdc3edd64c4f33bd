"""local.omnizon-10: one order of exactly 2 FlexFit yoga mats p41 ($24.99, 4.6 stars), to Alex in Seattle, card ending 1111"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
orders = new_orders(data)
ok = len(orders) == 1 and order_items(orders[0]) == {'p41': 2}
ok = ok and address_is(orders[0], 'Alex Morgan', '410 Pine Street, Apt 5', 'Seattle', 'WA', '98101')
ok = ok and paid_with(orders[0], '1111', 'Alex Morgan', '11/26')
report(ok)
