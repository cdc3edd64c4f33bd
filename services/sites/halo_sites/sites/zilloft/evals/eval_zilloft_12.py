"""local.zilloft-12: exactly mia3 is saved and one message about mia3 from Alex Kim was sent"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
reqs = requests(data)
ok = saved(data) == {"mia3"} and len(reqs) == 1
report(ok and contacted(reqs[0], "mia3", "Alex Kim", "305-555-0177", "alex.kim@example.com"))
