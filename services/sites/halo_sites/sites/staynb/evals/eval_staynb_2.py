"""local.staynb-2: one confirmed booking of kyo3, 12 to 16 August 2024, two adults, paid with the 4242 card"""

import sys

from _stay import added, day, digits, load, report

data = load(sys.argv[1])
bookings = added(data, "bookings")
b = bookings[0] if len(bookings) == 1 else {}
guests = b.get("guests") or {}
report(
    b.get("stayId") == "kyo3"
    and day(b.get("startDate")) == "2024-08-12"
    and day(b.get("endDate")) == "2024-08-16"
    and (guests.get("Adults"), guests.get("Children", 0), guests.get("Infants", 0), guests.get("Pets", 0))
    == (2, 0, 0, 0)
    and digits(b.get("cardLast4")) == "4242"
)
