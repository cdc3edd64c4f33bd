"""local.udriver-2: one ride taken now Salesforce Tower (103) -> Pier 39 (105), the cheapest type (Comfort, 25% off), paid in cash"""

import sys

from _ride import added, car_type, load, paid_with, report, route_is

data = load(sys.argv[1])
trips = added(data, "trips")
ok = (
    len(trips) == 1
    and trips[0].get("status") == "completed"
    and route_is(trips[0], 103, 105)
    and car_type(trips[0]) == "UdriverComfort"
    and paid_with(trips[0]) == "cash"
)
report(ok)
