"""local.zilloft-5: the search is Boston, MA with home type Condos only"""
import sys

from _homes import *  # noqa: F403

data = load(sys.argv[1])
s = final_search(data)
report(s["location"] == "Boston, MA" and s["homeTypes"] == ["condo"])
