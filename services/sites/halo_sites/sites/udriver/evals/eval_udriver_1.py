"""local.udriver-1: one Comfort ride Ferry Building (101) -> Oracle Park (102) scheduled for 7/20/2024 9:00 AM, nothing taken now"""

import sys

from _ride import added, car_type, load, report, route_is

data = load(sys.argv[1])
booked = [t for t in added(data, "scheduled") if t.get("status") == "scheduled"]
ok = (
    len(booked) == 1
    and route_is(booked[0], 101, 102)
    and car_type(booked[0]) == "UdriverComfort"
    and (booked[0].get("date"), booked[0].get("time")) == ("7/20/2024", "9:00 AM")
    and not added(data, "trips")
)
report(ok)
