"""local.opendining-1: one new confirmed reservation at Sakura Garden, 2024-07-19 7:30 PM, 4 people, Anniversary."""

import sys

from _dining import day, load, occasion, progress, report, reservations, restaurant_name

data = load(sys.argv[1])
added = reservations(data, "added")
ok = (
    len(added) == 1
    and restaurant_name(added[0]) == "Sakura Garden"
    and day(added[0]) == "2024-07-19"
    and added[0].get("time") == "7:30 PM"
    and added[0].get("guests") == "4 people"
    and occasion(added[0]) == "anniversary"
    and added[0].get("status") == "confirmed"
    and not reservations(data, "updated")
    and progress(data, "reservation_completed")
)
report(ok)
