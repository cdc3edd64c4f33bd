"""local.staynb-1: one new wishlist named "Lisbon 2024" holding exactly the Lisbon stay lis2"""

import sys

from _stay import added, load, report, text

data = load(sys.argv[1])
lists = added(data, "wishlists")
report(
    len(lists) == 1
    and text(lists[0].get("name")) == "lisbon 2024"
    and [s.get("id") for s in lists[0].get("stays") or [] if isinstance(s, dict)] == ["lis2"]
)
