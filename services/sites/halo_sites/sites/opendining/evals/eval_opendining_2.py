"""local.opendining-2: the Golden Lantern reservation is cancelled; nothing else changes."""

import sys

from _dining import load, report, reservations

data = load(sys.argv[1])
updated = reservations(data, "updated")
ok = (
    len(updated) == 1
    and updated[0].get("confirmationNumber") == "OD-40718"
    and updated[0].get("status") == "cancelled"
    and not reservations(data, "added")
    and not reservations(data, "deleted")
)
report(ok)
