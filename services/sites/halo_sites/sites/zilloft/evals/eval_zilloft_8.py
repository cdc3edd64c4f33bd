"""local.zilloft-8: one message about mia5 (9391 Magnolia St) from Jordan Lee with the given phone and email, naming the address"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
reqs = requests(data)
report(len(reqs) == 1 and contacted(reqs[0], "mia5", "Jordan Lee", "305-555-0142", "jordan.lee@example.com")
       and "9391 magnolia st" in text(reqs[0].get("message")))
