"""local.marrisuite-1: one new confirmed reservation: Courtfield Santa Barbara Goleta, the King room,
2024-07-26 to 2024-07-28, 1 room, 2 guests, Jordan Lee"""

import sys

from _stays import load, report, reservations

data = load(sys.argv[1])
added = reservations(data, "added")
r = added[0] if len(added) == 1 else {}
report(
    r.get("hotelId") == "gol-courtfield"
    and r.get("roomId") == "king"
    and (r.get("checkIn"), r.get("checkOut")) == ("2024-07-26", "2024-07-28")
    and (r.get("rooms"), r.get("guests")) == (1, 2)
    and str(r.get("guestName", "")).strip().lower() == "jordan lee"
    and str(r.get("email", "")).strip().lower() == "jordan.lee@example.com"
    and r.get("status") == "confirmed"
)
