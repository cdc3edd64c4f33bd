"""local.topwork-2: one offer to kevinwright titled Quarterly Forecast Review at $60/hr starting 2024-08-01"""

import sys

from _topwork import load, norm, offers_added, report

offers = offers_added(load(sys.argv[1]))
report(
    len(offers) == 1
    and offers[0].get("freelancerId") == "kevinwright"
    and norm(offers[0].get("contractTitle")) == "quarterly forecast review"
    and offers[0].get("hourlyRate") == 60
    and offers[0].get("startDate") == "2024-08-01"
    and offers[0].get("status") == "Pending"
)
