"""local.zilloft-10: exactly aus1 is saved and one message about aus1 from Sam Rivera mentions Saturday"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
reqs = requests(data)
ok = saved(data) == {"aus1"} and len(reqs) == 1
ok = ok and contacted(reqs[0], "aus1", "Sam Rivera", "512-555-0199", "sam.rivera@example.com")
report(ok and "saturday" in text(reqs[0].get("message")))
