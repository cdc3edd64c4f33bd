"""local.omnizon-12: one order of exactly the BrickBuild box p31 and the Catanza board game p35, to Taylor Brooks in Austin, card ending 0002"""
import sys

from _shop import *  # noqa: F403

data = load(sys.argv[1])
orders = new_orders(data)
ok = len(orders) == 1 and order_items(orders[0]) == {'p31': 1, 'p35': 1}
ok = ok and address_is(orders[0], 'Taylor Brooks', '88 Elm Street', 'Austin', 'TX', '78701')
ok = ok and paid_with(orders[0], '0002', 'Taylor Brooks', '03/28')
report(ok)
