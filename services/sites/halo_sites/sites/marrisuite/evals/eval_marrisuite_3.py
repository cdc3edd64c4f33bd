"""local.marrisuite-3: reservation res-1001 (Westmark Chicago Downtown) is cancelled, res-1002 is
not, and nothing was booked"""

import sys

from _stays import load, report, reservations

data = load(sys.argv[1])
status = {r.get("id"): r.get("status") for r in reservations(data, "updated")}
report(
    status.get("res-1001") == "cancelled"
    and status.get("res-1002", "confirmed") == "confirmed"
    and not reservations(data, "added")
    and not reservations(data, "deleted")
)
