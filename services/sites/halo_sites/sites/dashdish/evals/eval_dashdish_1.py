"""local.dashdish-1: one pickup order from Burger Barn of exactly two Classic Cheeseburgers"""

import sys

from _dash import items, load, placed_orders, report, shipping, text

data = load(sys.argv[1])
orders = placed_orders(data)
report(
    len(orders) == 1
    and text(orders[0].get("restaurantName")) == "burger barn"
    and shipping(orders[0])[0] == "pickup"
    and items(orders[0]) == {("classic cheeseburger", ""): 2}
)
