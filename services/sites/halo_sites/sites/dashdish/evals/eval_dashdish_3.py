"""local.dashdish-3: one Express delivery from Tony's Pizzeria of a large Pepperoni Pizza and Garlic Knots, $5 tip"""

import sys

from _dash import charge, items, load, placed_orders, report, shipping, text

data = load(sys.argv[1])
orders = placed_orders(data)
report(
    len(orders) == 1
    and text(orders[0].get("restaurantName")) == "tony's pizzeria"
    and shipping(orders[0]) == ("delivery", "express")
    and items(orders[0]) == {("pepperoni pizza", 'large 14"'): 1, ("garlic knots (6)", ""): 1}
    and charge(orders[0], "tip") == 5.0
)
